import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { Construct } from 'constructs';
import { LEDGER_ROLES } from '../functions/contract/routes';
import { ToolLedger } from './tool-ledger';
import type { ToolLedgerProps } from './tool-ledger-props';

/** The deployable stack: the construct, an optional alarm e-mail topic, and the outputs people need. */
export interface ToolLedgerStackProps extends StackProps {
  /** The construct's settings. @default the construct's defaults */
  readonly ledger?: ToolLedgerProps;
  /**
   * E-mail address subscribed to the alarm topic (the construct's own, or `ledger.alarmTopic`);
   * confirm the subscription mail.
   * @default no subscription: the alarms notify the topic, and you subscribe to it
   */
  readonly alarmEmail?: string;
}

/**
 * tool-ledger as one stack. Outputs: the API base URL, the queue and DLQ URLs, the table name and the
 * ARNs of the policies to attach to agent, approver, operator and producer roles.
 */
export class ToolLedgerStack extends Stack {
  /** The construct. */
  readonly ledger: ToolLedger;

  constructor(scope: Construct, id: string, props: ToolLedgerStackProps = {}) {
    super(scope, id, { description: 'tool-ledger: makes AI agents tool calls safe to retry', ...props });
    this.ledger = new ToolLedger(this, 'ToolLedger', props.ledger);
    if (props.alarmEmail !== undefined) {
      this.ledger.alarmTopic.addSubscription(new EmailSubscription(props.alarmEmail));
    }

    const output = (id: string, value: string, description: string) =>
      new CfnOutput(this, id, { value, description });
    output(
      'ApiUrl',
      this.ledger.api.url,
      'API base URL (routes start with v1/); sign requests with SigV4, service execute-api',
    );
    output('QueueUrl', this.ledger.queue.queueUrl, 'Work queue URL (its messages: the contract, §6)');
    output('DeadLetterQueueUrl', this.ledger.deadLetterQueue.queueUrl, 'Dead-letter queue URL');
    output('TableName', this.ledger.table.tableName, 'Ledger table name');
    for (const role of LEDGER_ROLES) {
      const name = `${role.charAt(0).toUpperCase()}${role.slice(1)}PolicyArn`;
      output(
        name,
        this.ledger.policies[role].managedPolicyArn,
        `Attach to IAM roles bound as ${role}s in tenants`,
      );
    }
    output(
      'ProducerPolicyArn',
      this.ledger.producerPolicy.managedPolicyArn,
      'Attach to roles that send to the work queue',
    );
    output(
      'AlarmTopicArn',
      this.ledger.alarmTopic.topicArn,
      'SNS topic every alarm notifies; subscribe to it',
    );
    output('DashboardName', this.ledger.dashboard.dashboardName, 'CloudWatch dashboard');
    // What `npm run smoke` reads after a deploy: where the executor logs, and the API's settings.
    output(
      'ExecutorLogGroup',
      this.ledger.executorFunction.logGroup.logGroupName,
      "The executor's log group (one line per work message, by message ID)",
    );
    output('ApiFunctionName', this.ledger.apiFunction.functionName, 'The API handler function');
    output(
      'LateOutcomesAlarmName',
      this.ledger.alarms.LateOutcomes!.alarmName,
      'An alarm the smoke test sets to ALARM once to prove notifications reach the topic',
    );
  }
}
