import { CALLER_CHECKS } from '/work/wt/caller-model/scripts/verify/caller-checks';
import { modelCheck } from '/work/wt/caller-model/scripts/verify/model-check';

const t = Date.now();
const r = await modelCheck(CALLER_CHECKS.map((c) => c.name));
console.log(
  'failed',
  r.filter((x) => !x.ok).map((x) => x.check.name),
  (Date.now() - t) / 1000,
  's',
);
