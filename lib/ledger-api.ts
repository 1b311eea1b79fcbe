import { Annotations, RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import {
  AccessLogField,
  AccessLogFormat,
  AuthorizationType,
  CfnAccount,
  EndpointType,
  type IResource,
  JsonSchemaType,
  JsonSchemaVersion,
  LambdaIntegration,
  LogGroupLogDestination,
  MethodLoggingLevel,
  RequestValidator,
  ResponseType,
  RestApi,
  SecurityPolicy,
} from 'aws-cdk-lib/aws-apigateway';
import type { ICertificate } from 'aws-cdk-lib/aws-certificatemanager';
import type { IVpcEndpoint } from 'aws-cdk-lib/aws-ec2';
import {
  Grant,
  type IGrantable,
  ManagedPolicy,
  PolicyStatement,
  Role,
  ServicePrincipal,
} from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { CfnWebACLAssociation } from 'aws-cdk-lib/aws-wafv2';
import { Construct } from 'constructs';
import {
  LEDGER_ROUTES,
  type LedgerRole,
  type LedgerRoute,
  routeArnPath,
  routeOf,
  routesOf,
} from '../functions/contract/routes';
import { apiResourcePolicy, principalsFor, RESOURCE_POLICY_MAX_LENGTH } from './api-resource-policy';
import { ToolLedgerConfigError } from './config-error';
import { acknowledgeWildcardResources } from './nag';
import type { Throttling } from './settings';
import type { ResolvedTenant } from './tenant-bindings';

/**
 * The REST API of the contract's §5: IAM (SigV4) authorization on every method, a resource policy from the tenant
 * map (lib/api-resource-policy.ts: each route only for the principals of its roles), one IAM policy per
 * role that allows `execute-api:Invoke` on that role's routes only, stage and reconcile-route
 * throttling, access logs without bodies or headers, and gateway-made errors shaped like the handler's
 * (`application/problem+json` with a stable `code`).
 */

/** Settings of the API. */
export interface LedgerApiProps {
  /** The API handler (REST proxy events). */
  handler: IFunction;
  /** How long access logs are kept. */
  logRetention: RetentionDays;
  /** A customer-managed key for the access log group. */
  logKey?: IKey | undefined;
  /** What happens to the access log group when the stack is deleted. */
  removalPolicy: RemovalPolicy;
  /** Active X-Ray tracing on the stage. */
  tracing: boolean;
  /** The REST API's name: the instance's name, so two deployments in one account are told apart. */
  name: string;
  /** Who may call which route (the resource policy). */
  tenants: Readonly<Record<string, ResolvedTenant>>;
  /** Stage-wide throttling (requests per second, and bucket size). */
  throttling: Throttling;
  /** Throttling of `POST /v1/reconciliations`, which runs a whole reconciler pass. */
  reconcileThrottling: Throttling;
  /** Per-method CloudWatch metrics (billed as custom metrics); API-wide metrics are always there. */
  detailedMetrics: boolean;
  /** Execution logs (errors only); needs the account's API Gateway logging role. */
  executionLogging: boolean;
  /** Create the account-level role API Gateway needs to write access and execution logs. */
  cloudWatchRole: boolean;
  /** A WAFv2 web ACL to associate with the stage. */
  webAclArn: string | undefined;
  /** The stage name. */
  stageName: string;
  /** Interface endpoints of a private API; undefined for a regional one. */
  privateEndpoints: readonly IVpcEndpoint[] | undefined;
  /** A custom domain mapped to the stage. */
  domainName: { name: string; certificate: ICertificate; basePath?: string } | undefined;
}

/** The route whose method limit is lower than the stage's: each call runs a reconciler pass. */
const RECONCILE_ROUTE = routeOf('reconcile');

/**
 * Errors API Gateway produces before the handler runs, with the handler's codes (the status table of the contract's §5).
 * `MISSING_AUTHENTICATION_TOKEN` is also what API Gateway answers for a route that does not exist.
 */
const GATEWAY_ERRORS: ReadonlyArray<{ type: ResponseType; status?: string; code: string }> = [
  { type: ResponseType.MISSING_AUTHENTICATION_TOKEN, status: '401', code: 'unauthenticated' },
  { type: ResponseType.INVALID_SIGNATURE, status: '401', code: 'unauthenticated' },
  { type: ResponseType.EXPIRED_TOKEN, status: '401', code: 'unauthenticated' },
  { type: ResponseType.UNAUTHORIZED, status: '401', code: 'unauthenticated' },
  { type: ResponseType.ACCESS_DENIED, status: '403', code: 'forbidden' },
  { type: ResponseType.BAD_REQUEST_BODY, status: '400', code: 'validation_failed' },
  { type: ResponseType.REQUEST_TOO_LARGE, status: '413', code: 'payload_too_large' },
  { type: ResponseType.UNSUPPORTED_MEDIA_TYPE, status: '415', code: 'unsupported_media_type' },
  { type: ResponseType.THROTTLED, status: '429', code: 'throttled' },
  { type: ResponseType.QUOTA_EXCEEDED, status: '429', code: 'throttled' },
  { type: ResponseType.WAF_FILTERED, status: '403', code: 'forbidden' },
  { type: ResponseType.RESOURCE_NOT_FOUND, status: '404', code: 'not_found' },
  { type: ResponseType.INTEGRATION_TIMEOUT, status: '504', code: 'gateway_timeout' },
  // Everything else keeps the status API Gateway chose and still answers problem+json.
  { type: ResponseType.DEFAULT_4XX, code: 'request_refused' },
  { type: ResponseType.DEFAULT_5XX, code: 'gateway_error' },
];

const ROUTE_WILDCARD_REASON =
  'execute-api ARNs write the {id} path parameter as *; each ARN names one stage, one method and one route ' +
  'shape, and every route ending in a fixed segment (/approval, /resolution, /lease, /outcome, ' +
  '/reconciliation) keeps it after the *.';

const JSON_TYPES = {
  string: JsonSchemaType.STRING,
  integer: JsonSchemaType.INTEGER,
  object: JsonSchemaType.OBJECT,
  boolean: JsonSchemaType.BOOLEAN,
} as const;

/** The API, its access logs and the per-role policies. */
export class LedgerApi extends Construct {
  /** The REST API. */
  readonly api: RestApi;
  /** Access log group (one JSON line per request; no bodies, no headers). */
  readonly accessLogs: LogGroup;
  /** One managed policy per role; attach it to the role of each principal bound to that role. */
  readonly policies: Readonly<Record<LedgerRole, ManagedPolicy>>;
  private readonly tenants: Readonly<Record<string, ResolvedTenant>>;

  constructor(scope: Construct, id: string, props: LedgerApiProps) {
    super(scope, id);
    this.tenants = props.tenants;
    this.accessLogs = new LogGroup(this, 'AccessLogs', {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
      ...(props.logKey === undefined ? {} : { encryptionKey: props.logKey }),
    });
    const privateEndpoints = props.privateEndpoints ?? [];
    const policy = apiResourcePolicy(
      props.tenants,
      props.stageName,
      privateEndpoints.map((endpoint) => endpoint.vpcEndpointId),
    );
    const methodSettings = {
      loggingLevel: props.executionLogging ? MethodLoggingLevel.ERROR : MethodLoggingLevel.OFF,
      dataTraceEnabled: false,
      metricsEnabled: props.detailedMetrics,
    };
    this.api = new RestApi(this, 'Api', {
      restApiName: props.name,
      description: 'tool-ledger: run AI agents tool calls at most once (SigV4-signed requests only)',
      ...(privateEndpoints.length > 0
        ? { endpointConfiguration: { types: [EndpointType.PRIVATE], vpcEndpoints: [...privateEndpoints] } }
        : { endpointTypes: [EndpointType.REGIONAL] }),
      // The account-level logging role is the stack's (accountLoggingRole below), not each API's.
      cloudWatchRole: false,
      defaultMethodOptions: { authorizationType: AuthorizationType.IAM },
      policy,
      deployOptions: {
        stageName: props.stageName,
        accessLogDestination: new LogGroupLogDestination(this.accessLogs),
        accessLogFormat: accessLogFormat(),
        // Execution logs at ERROR at most, and never request/response data (no arguments, results or headers in any log).
        ...methodSettings,
        tracingEnabled: props.tracing,
        throttlingRateLimit: props.throttling.rateLimit,
        throttlingBurstLimit: props.throttling.burstLimit,
        methodOptions: {
          // A method setting replaces the stage's for that method, so it restates the logging choices.
          [`${RECONCILE_ROUTE.path}/${RECONCILE_ROUTE.method}`]: {
            ...methodSettings,
            throttlingRateLimit: props.reconcileThrottling.rateLimit,
            throttlingBurstLimit: props.reconcileThrottling.burstLimit,
          },
        },
      },
    });
    // A REST API's resource policy takes effect only with a new deployment: tie the deployment's
    // identity to the policy, so a change of tenants redeploys the stage.
    this.api.latestDeployment?.addToLogicalId({ policy: Stack.of(this).resolve(policy.toJSON()) });
    if (Object.keys(props.tenants).length === 0) {
      Annotations.of(this).addWarningV2(
        'tool-ledger:no-tenants',
        'No tenant is bound, so nobody can call this deployment (the resource policy refuses every ' +
          'principal): pass tenants, e.g. { acme: { agents: [agentRoleArn], operators: [opsRoleArn] } } ' +
          '(or the toolLedger:tenants context of bin/app.ts).',
      );
    }
    const policyLength = JSON.stringify(Stack.of(this).resolve(policy.toJSON())).length;
    if (policyLength > RESOURCE_POLICY_MAX_LENGTH) {
      Annotations.of(this).addWarningV2(
        'tool-ledger:resource-policy-length',
        `The API's resource policy is about ${policyLength} characters, over API Gateway's default quota of ` +
          `${RESOURCE_POLICY_MAX_LENGTH}: request a higher "Length, in characters, of API Gateway resource policy" ` +
          'quota before deploying, or bind fewer principals (one role per tenant and role).',
      );
    }
    if (props.cloudWatchRole) this.api.deploymentStage.node.addDependency(accountLoggingRole(this));
    if (props.domainName !== undefined) {
      this.api.addDomainName('Domain', {
        domainName: props.domainName.name,
        certificate: props.domainName.certificate,
        endpointType: EndpointType.REGIONAL,
        securityPolicy: SecurityPolicy.TLS_1_2,
        ...(props.domainName.basePath === undefined ? {} : { basePath: props.domainName.basePath }),
      });
    }
    // The stack outputs the URL once, as ApiUrl; RestApi's own Endpoint output would repeat it.
    this.api.node.tryRemoveChild('Endpoint');
    this.addRoutes(props.handler);
    this.addGatewayErrors();
    this.policies = {
      agent: this.rolePolicy('agent'),
      approver: this.rolePolicy('approver'),
      operator: this.rolePolicy('operator'),
    };
    if (props.webAclArn !== undefined) {
      new CfnWebACLAssociation(this, 'WebAcl', {
        resourceArn: this.api.deploymentStage.stageArn,
        webAclArn: props.webAclArn,
      });
    } else {
      Validations.of(this.api).acknowledge({
        id: 'AwsSolutions-APIG3',
        reason:
          'Every method requires a SigV4 signature from an IAM principal bound to a tenant, so anonymous ' +
          'traffic is refused before any integration runs; teams that want a WAF pass webAclArn.',
      });
    }
    Validations.of(this.api).acknowledge({
      id: 'AwsSolutions-COG4',
      reason:
        'The API authorizes with IAM (SigV4) on every method by design (the tenant comes from the authenticated IAM caller); Cognito does not apply.',
    });
    if (!props.executionLogging) {
      Validations.of(this.api).acknowledge({
        id: 'AwsSolutions-APIG6',
        reason:
          'Execution logs need the account-wide API Gateway logging role, which one instance must not own for ' +
          'all; every request is still in the access logs (status, principal, integration request ID). Turn on ' +
          'apiExecutionLogging where the account has the role.',
      });
    }
  }

  /** Allow a principal to call the routes of a role. */
  grant(role: LedgerRole, grantee: IGrantable): Grant {
    const resourceArns = this.routeArns(role);
    const principalAccount = grantee.grantPrincipal.principalAccount;
    const account = Stack.of(this).account;
    if (
      principalAccount !== undefined &&
      !Token.isUnresolved(principalAccount) &&
      !Token.isUnresolved(account) &&
      principalAccount !== account
    ) {
      // CDK would accept the grant and attach nothing: a role of another account is immutable here.
      throw new ToolLedgerConfigError([
        `grant${capitalize(role)}: ${describePrincipal(grantee)} is in account ${principalAccount}, and this app ` +
          `deploys to ${account}, so no policy can be attached to it from here. Bind its ARN in tenants (the ` +
          "API's resource policy then admits it on the routes of its roles) and attach an identity policy in " +
          'its own account that allows execute-api:Invoke on this API.',
      ]);
    }
    const arn = describePrincipal(grantee);
    if (arn.startsWith('arn:') || Token.isUnresolved(arn)) {
      if (!principalsFor(this.tenants, [role]).includes(arn)) {
        // The identity policy alone gets it nowhere: the resource policy denies principals not bound.
        Annotations.of(this).addWarningV2(
          'tool-ledger:grant-unbound',
          `grant${capitalize(role)}: ${Token.isUnresolved(arn) ? 'this role' : arn} is not bound as an ${role} in ` +
            "tenants, so the API's resource policy still refuses it: add it to a tenant's " +
            `${role}s.`,
        );
      }
    }
    const grant = Grant.addToPrincipal({ grantee, actions: ['execute-api:Invoke'], resourceArns });
    if (grantee instanceof Construct)
      acknowledgeWildcardResources(grantee, resourceArns, ROUTE_WILDCARD_REASON);
    return grant;
  }

  /** `execute-api` ARNs of a role's routes on the deployed stage. */
  routeArns(role: LedgerRole): string[] {
    const stage = this.api.deploymentStage.stageName;
    return routesOf(role).map((route) =>
      this.api.arnForExecuteApi(route.method, routeArnPath(route.path), stage),
    );
  }

  private addRoutes(handler: IFunction): void {
    const integration = new LambdaIntegration(handler, { proxy: true, allowTestInvoke: false });
    const validator = new RequestValidator(this, 'Validator', {
      restApi: this.api,
      validateRequestBody: true,
      validateRequestParameters: true,
    });
    const resources = new Map<string, IResource>([['', this.api.root]]);
    const resourceFor = (path: string): IResource => {
      const existing = resources.get(path);
      if (existing) return existing;
      const cut = path.lastIndexOf('/');
      const resource = resourceFor(path.slice(0, cut)).addResource(path.slice(cut + 1));
      resources.set(path, resource);
      return resource;
    };
    for (const route of LEDGER_ROUTES) {
      const resource = resourceFor(route.path);
      const pathParameters = [...route.path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]);
      resource.addMethod(route.method, integration, {
        authorizationType: AuthorizationType.IAM,
        requestValidator: validator,
        requestParameters: Object.fromEntries(
          pathParameters.map((name) => [`method.request.path.${name}`, true]),
        ),
        requestModels: route.body ? { 'application/json': this.bodyModel(route) } : undefined,
      });
    }
  }

  private bodyModel(route: LedgerRoute) {
    const body = route.body!;
    const name = `${route.method}${route.path.replace(/[^A-Za-z0-9]/g, '')}`;
    return this.api.addModel(`${name}Model`, {
      contentType: 'application/json',
      schema: {
        schema: JsonSchemaVersion.DRAFT4,
        type: JsonSchemaType.OBJECT,
        required: [...body.required],
        properties: Object.fromEntries(
          Object.entries(body.properties).map(([key, property]) => [
            key,
            {
              type: JSON_TYPES[property.type],
              ...(property.enum ? { enum: [...property.enum] } : {}),
              ...(property.minimum !== undefined ? { minimum: property.minimum } : {}),
              ...(property.maximum !== undefined ? { maximum: property.maximum } : {}),
            },
          ]),
        ),
      },
    });
  }

  private addGatewayErrors(): void {
    for (const error of GATEWAY_ERRORS) {
      this.api.addGatewayResponse(`Error${error.type.responseType}`, {
        type: error.type,
        statusCode: error.status,
        responseHeaders: { 'Content-Type': "'application/problem+json'" },
        templates: {
          'application/json':
            `{"type":"about:blank","title":$context.error.messageString,` +
            (error.status !== undefined ? `"status":${error.status},` : '') +
            `"code":"${error.code}","request_id":"$context.requestId"}`,
        },
      });
    }
  }

  private rolePolicy(role: LedgerRole): ManagedPolicy {
    const policy = new ManagedPolicy(this, `${capitalize(role)}Policy`, {
      description: `tool-ledger ${role}: execute-api:Invoke on the ${role} routes only`,
      statements: [new PolicyStatement({ actions: ['execute-api:Invoke'], resources: this.routeArns(role) })],
    });
    acknowledgeWildcardResources(policy, this.routeArns(role), ROUTE_WILDCARD_REASON);
    return policy;
  }
}

/**
 * The account-level role API Gateway writes access and execution logs with (`AWS::ApiGateway::Account`),
 * once per stack however many instances it holds. A stage with access logs fails to deploy in an
 * account without it, so the first deploy in a fresh account needs it. It is one setting per account
 * and region, shared by every REST API there: the role and the setting are retained when the stack is
 * deleted, so other APIs keep logging; setting it where another stack already did changes nothing for
 * them (any role with AmazonAPIGatewayPushToCloudWatchLogs serves every API of the account).
 */
export function accountLoggingRole(scope: Construct): CfnAccount {
  const stack = Stack.of(scope);
  const id = 'ToolLedgerApiGatewayAccount';
  const existing = stack.node.tryFindChild(id);
  if (existing !== undefined) return (existing as Construct).node.defaultChild as CfnAccount;
  const holder = new Construct(stack, id);
  const role = new Role(holder, 'LoggingRole', {
    assumedBy: new ServicePrincipal('apigateway.amazonaws.com'),
    description:
      'API Gateway writes REST API access and execution logs with this role (account-wide setting)',
    managedPolicies: [
      ManagedPolicy.fromAwsManagedPolicyName('service-role/AmazonAPIGatewayPushToCloudWatchLogs'),
    ],
  });
  role.applyRemovalPolicy(RemovalPolicy.RETAIN);
  const account = new CfnAccount(holder, 'Resource', { cloudWatchRoleArn: role.roleArn });
  account.applyRemovalPolicy(RemovalPolicy.RETAIN);
  Validations.of(role).acknowledge({
    id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
    reason:
      "API Gateway's account-level logging role uses AmazonAPIGatewayPushToCloudWatchLogs, the policy AWS " +
      'documents for exactly this role; it grants only log writes.',
  });
  return account;
}

function accessLogFormat(): AccessLogFormat {
  return AccessLogFormat.custom(
    JSON.stringify({
      requestId: AccessLogField.contextRequestId(),
      // The handler's Lambda request ID: joins an access log line with the handler's log lines.
      integrationRequestId: '$context.integration.requestId',
      requestTime: AccessLogField.contextRequestTimeEpoch(),
      principal: AccessLogField.contextIdentityUserArn(),
      sourceIp: AccessLogField.contextIdentitySourceIp(),
      method: AccessLogField.contextHttpMethod(),
      resource: AccessLogField.contextResourcePath(),
      path: AccessLogField.contextPath(),
      status: AccessLogField.contextStatus(),
      protocol: AccessLogField.contextProtocol(),
      responseLength: AccessLogField.contextResponseLength(),
      responseLatency: AccessLogField.contextResponseLatency(),
      integrationLatency: AccessLogField.contextIntegrationLatency(),
      integrationStatus: AccessLogField.contextIntegrationStatus(),
      errorType: AccessLogField.contextErrorResponseType(),
    }),
  );
}

/** A principal as a person would name it in an error: its ARN when it has one. */
function describePrincipal(grantee: IGrantable): string {
  const principal = grantee.grantPrincipal as { roleArn?: string; userArn?: string };
  return principal.roleArn ?? principal.userArn ?? String(grantee.grantPrincipal);
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
