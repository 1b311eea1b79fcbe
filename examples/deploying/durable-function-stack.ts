import { App, Duration, Stack } from 'aws-cdk-lib';
import { ManagedPolicy, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Runtime } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { ToolLedger } from 'tool-ledger';

const app = new App();
const stack = new Stack(app, 'Orders');

// The durable function's own role: the ledger's API admits it as an agent of tenant acme.
const ordersRole = new Role(stack, 'OrdersRole', {
  assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
  managedPolicies: [
    ManagedPolicy.fromAwsManagedPolicyName('service-role/AWSLambdaBasicDurableExecutionRolePolicy'),
  ],
});

const ledger = new ToolLedger(stack, 'Ledger', {
  tenants: { acme: { agents: [ordersRole.roleArn] } },
  // Optional: the tool names callers may declare (any name otherwise), and the policy forced on them.
  callerTools: [{ pattern: 'payments.*', maxAttempts: 3 }],
});

const orders = new NodejsFunction(stack, 'OrdersFunction', {
  entry: 'src/orders.ts',
  runtime: Runtime.NODEJS_24_X,
  role: ordersRole,
  durableConfig: { executionTimeout: Duration.days(7) },
  environment: { LEDGER_API_URL: ledger.api.url },
});

// execute-api:Invoke on the agent routes: the claim, its heartbeat, outcome and verdict, and reads.
ledger.grantAgent(orders);
