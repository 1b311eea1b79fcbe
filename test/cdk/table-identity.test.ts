import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { SETTINGS } from '../../functions/contract/environment';
import { IDENTITY_KEY, RECORD_FORMAT } from '../../functions/contract/table';
import { exampleStack, testApp } from './synth';

/**
 * A replaced table must not silently start an empty ledger: the deployment writes the ledger's
 * identity item when it is created (keeping one already there), every later change of the table
 * requires the item to be there, and the handlers start only after that check (they read the
 * identity it returns), so a deploy that would point them at a table without it fails and rolls back.
 */

type Props = Record<string, unknown>;

describe('the table identity guard', () => {
  it('writes the identity on create, requires it on update, and the handlers wait for it', () => {
    const t = Template.fromStack(exampleStack(testApp()));
    const guards = Object.entries(t.findResources('Custom::AWS'));
    expect(guards).toHaveLength(1);
    const [guardId, guard] = guards[0]!;
    const create = JSON.parse(JSON.stringify((guard.Properties as Props).Create)) as unknown;
    const update = JSON.parse(JSON.stringify((guard.Properties as Props).Update)) as unknown;
    const text = (value: unknown) => JSON.stringify(value);
    // Create: adopt an identity already there, or start one.
    expect(text(create)).toContain('if_not_exists(#id, :id)');
    expect(text(create)).toContain(IDENTITY_KEY.pk);
    expect(text(create)).toContain(`${RECORD_FORMAT}`);
    // Update (a changed table): only where the identity already is.
    expect(text(update)).toContain('attribute_exists(#id)');
    // Every handler's environment names the identity read back, so each waits for the check.
    // (The events function only reads the table's stream: it opens no ledger.)
    for (const fn of Object.values(t.findResources('AWS::Lambda::Function')).filter(
      (f) =>
        String((f.Properties as Props).Description).startsWith('tool-ledger') &&
        !String((f.Properties as Props).Description).includes('completion events'),
    )) {
      const variables = ((fn.Properties as Props).Environment as { Variables: Props }).Variables;
      expect(variables[SETTINGS.ledgerId.name]).toEqual({
        'Fn::GetAtt': [guardId, 'Attributes.ledger_id.S'],
      });
    }
    // Its provider may update the identity item alone.
    const statements = Object.values(t.findResources('AWS::IAM::Policy')).flatMap(
      (p) => ((p.Properties as Props).PolicyDocument as { Statement: Props[] }).Statement,
    );
    const updates = statements.filter((s) => s.Action === 'dynamodb:UpdateItem');
    expect(updates).toHaveLength(1);
    expect(updates[0]).toMatchObject({
      Effect: 'Allow',
      Condition: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': [IDENTITY_KEY.pk] } },
    });
  });
});
