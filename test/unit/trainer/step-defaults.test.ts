import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RewardBaseline } from '../../../trainer/reward-baseline.ts';
import { BUILTIN_STEP_DEFAULTS, familyStepOptions, familyStepSettings, LORA_STEP_DEFAULTS } from '../../../trainer/step-defaults.ts';

describe('familyStepSettings', () => {
  it('fills what is unset with the family’s defaults: the KL, baseline, positive OPD and pleased damping for LoRA, none for the built-in model', () => {
    assert.deepEqual(familyStepSettings(true, {}), {
      klCoef: 0.25,
      rewardBaseline: 0.3,
      rewardBaselinePrior: -1,
      opdAdvantage: 'positive',
      pleasedDamping: 1,
    });
    assert.deepEqual(familyStepSettings(false, {}), {
      klCoef: 0,
      rewardBaseline: 0,
      rewardBaselinePrior: 0,
      opdAdvantage: 'raw',
      pleasedDamping: 0,
    });
    assert.deepEqual(familyStepSettings(true, {}), LORA_STEP_DEFAULTS);
    assert.deepEqual(familyStepSettings(false, {}), BUILTIN_STEP_DEFAULTS);
  });

  it('keeps every value given, zeros and the raw term included', () => {
    const given = { klCoef: 0, rewardBaseline: 0, rewardBaselinePrior: 0, opdAdvantage: 'raw' as const, pleasedDamping: 0.5 };
    assert.deepEqual(familyStepSettings(true, given), given);
    assert.deepEqual(familyStepSettings(false, { klCoef: 0.1, opdAdvantage: 'centered' }), {
      klCoef: 0.1,
      rewardBaseline: 0,
      rewardBaselinePrior: 0,
      opdAdvantage: 'centered',
      pleasedDamping: 0,
    });
  });

  it('an unset field given as undefined still falls back', () => {
    assert.deepEqual(familyStepSettings(true, { klCoef: undefined, opdAdvantage: undefined }), LORA_STEP_DEFAULTS);
  });

  it('as learner-step options: a reward baseline with the prior when its decay is above 0, none at 0', () => {
    const lora = familyStepOptions(LORA_STEP_DEFAULTS);
    assert.equal(lora.klCoef, 0.25);
    assert.equal(lora.opdAdvantage, 'positive');
    assert.ok(lora.rewardBaseline instanceof RewardBaseline);
    const sample = { userId: 'u1', policyModelId: 'm', reward: -1 };
    assert.equal(lora.rewardBaseline.of(sample), -1, 'a new user starts at the prior');
    assert.deepEqual(familyStepOptions(BUILTIN_STEP_DEFAULTS), { klCoef: 0, opdAdvantage: 'raw' });
  });

  it('pleased damping: passed on with the baseline’s means, or with means of its own that shift no reward when the baseline is off', () => {
    const withBaseline = familyStepOptions({ ...LORA_STEP_DEFAULTS, pleasedDamping: 0.5 });
    assert.equal(withBaseline.pleasedDamping, 0.5);
    assert.equal(withBaseline.rewardBaseline?.of({ userId: 'u', policyModelId: 'm', reward: -1 }), -1);
    const alone = familyStepOptions({ ...BUILTIN_STEP_DEFAULTS, pleasedDamping: 1 });
    assert.equal(alone.pleasedDamping, 1);
    assert.ok(alone.rewardBaseline instanceof RewardBaseline);
    assert.equal(alone.rewardBaseline.of({ userId: 'u', policyModelId: 'm', reward: -1 }), 0, 'not subtracted');
    alone.rewardBaseline.observe([{ userId: 'u', policyModelId: 'm', reward: 1 }]);
    assert.ok(alone.rewardBaseline.meanOf({ userId: 'u', policyModelId: 'm' }) > 0, 'but tracked');
  });
});
