import { type RemovalPolicy, Validations } from 'aws-cdk-lib';
import {
  AccessLogField,
  AccessLogFormat,
  AuthorizationType,
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
} from 'aws-cdk-lib/aws-apigateway';
import { Grant, type IGrantable, ManagedPolicy, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { CfnWebACLAssociation } from 'aws-cdk-lib/aws-wafv2';
import { Construct } from 'constructs';
import { acknowledgeWildcardResources } from './nag';
import { LEDGER_ROUTES, type LedgerRole, type LedgerRoute, routeArnPath, routesOf } from './routes';

/**
 * The REST API of SPEC §5: IAM (SigV4) authorization on every method, one IAM policy per role that
 * allows `execute-api:Invoke` on that role's routes only, access logs without bodies or headers, and
 * gateway-made errors shaped like the handler's (`application/problem+json` with a stable `code`).
 */

/** Stage the API is deployed to; part of the base URL. */
export const API_STAGE = 'prod';

/** Settings of the API. */
export interface LedgerApiProps {
  /** The API handler (REST proxy events). */
  handler: IFunction;
  /** How long access logs are kept. */
  logRetention: RetentionDays;
  /** What happens to the access log group when the stack is deleted. */
  removalPolicy: RemovalPolicy;
  /** Active X-Ray tracing on the stage. */
  tracing: boolean;
  /** Stage-wide throttling, if any. */
  throttling: { rateLimit: number; burstLimit: number } | undefined;
  /** Create the account-level role API Gateway needs to write execution logs. */
  cloudWatchRole: boolean;
  /** A WAFv2 web ACL to associate with the stage. */
  webAclArn: string | undefined;
}

/**
 * Errors API Gateway produces before the handler runs, with the handler's codes (SPEC §5 table).
 * `MISSING_AUTHENTICATION_TOKEN` is also what API Gateway answers for a route that does not exist.
 */
const GATEWAY_ERRORS: ReadonlyArray<{ type: ResponseType; status: string; code: string }> = [
  { type: ResponseType.MISSING_AUTHENTICATION_TOKEN, status: '401', code: 'unauthenticated' },
  { type: ResponseType.INVALID_SIGNATURE, status: '401', code: 'unauthenticated' },
  { type: ResponseType.EXPIRED_TOKEN, status: '401', code: 'unauthenticated' },
  { type: ResponseType.UNAUTHORIZED, status: '401', code: 'unauthenticated' },
  { type: ResponseType.ACCESS_DENIED, status: '403', code: 'forbidden' },
  { type: ResponseType.BAD_REQUEST_BODY, status: '400', code: 'validation_failed' },
  { type: ResponseType.REQUEST_TOO_LARGE, status: '413', code: 'payload_too_large' },
  { type: ResponseType.UNSUPPORTED_MEDIA_TYPE, status: '415', code: 'unsupported_media_type' },
  { type: ResponseType.THROTTLED, status: '429', code: 'throttled' },
  { type: ResponseType.INTEGRATION_TIMEOUT, status: '504', code: 'gateway_timeout' },
];

const ROUTE_WILDCARD_REASON =
  'execute-api ARNs write the {id} path parameter as *; each ARN names one stage, one method and one route ' +
  'shape, and every route ending in a fixed segment (/approval, /resolution) keeps it after the *.';

const JSON_TYPES = {
  string: JsonSchemaType.STRING,
  integer: JsonSchemaType.INTEGER,
  object: JsonSchemaType.OBJECT,
} as const;

/** The API, its access logs and the per-role policies. */
export class LedgerApi extends Construct {
  /** The REST API. */
  readonly api: RestApi;
  /** Access log group (one JSON line per request; no bodies, no headers). */
  readonly accessLogs: LogGroup;
  /** One managed policy per role; attach it to the role of each principal bound to that role. */
  readonly policies: Readonly<Record<LedgerRole, ManagedPolicy>>;

  constructor(scope: Construct, id: string, props: LedgerApiProps) {
    super(scope, id);
    this.accessLogs = new LogGroup(this, 'AccessLogs', {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    this.api = new RestApi(this, 'Api', {
      description: 'tool-ledger: run AI agents tool calls at most once (SigV4-signed requests only)',
      endpointTypes: [EndpointType.REGIONAL],
      cloudWatchRole: props.cloudWatchRole,
      cloudWatchRoleRemovalPolicy: props.cloudWatchRole ? props.removalPolicy : undefined,
      defaultMethodOptions: { authorizationType: AuthorizationType.IAM },
      deployOptions: {
        stageName: API_STAGE,
        accessLogDestination: new LogGroupLogDestination(this.accessLogs),
        accessLogFormat: accessLogFormat(),
        // Execution logs at ERROR only, and never request/response data (SPEC §9: data tracing off).
        loggingLevel: MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
        metricsEnabled: true,
        tracingEnabled: props.tracing,
        throttlingRateLimit: props.throttling?.rateLimit,
        throttlingBurstLimit: props.throttling?.burstLimit,
      },
    });
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
        'The API authorizes with IAM (SigV4) on every method by design (SPEC §1: tenants are IAM principals); Cognito does not apply.',
    });
    if (props.cloudWatchRole) {
      Validations.of(this.api).acknowledge({
        id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
        reason:
          "API Gateway's account-level logging role uses AmazonAPIGatewayPushToCloudWatchLogs, the policy AWS " +
          'documents for exactly this role; it grants only log writes.',
      });
    }
  }

  /** Allow a principal to call the routes of a role. */
  grant(role: LedgerRole, grantee: IGrantable): Grant {
    const resourceArns = this.routeArns(role);
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
            `{"type":"about:blank","title":$context.error.messageString,"status":${error.status},` +
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

function accessLogFormat(): AccessLogFormat {
  return AccessLogFormat.custom(
    JSON.stringify({
      requestId: AccessLogField.contextRequestId(),
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

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
