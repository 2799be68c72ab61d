import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { trainSettings } from '../../../../cli/commands/train.ts';
import { loadConfig } from '../../../../cli/config.ts';
import { TurnstreamError } from '../../../../core/errors.ts';

const config = (env: Record<string, string> = {}) => loadConfig(env, '/tmp');
/** The learner's settings in the environment, for the flags to keep or override. */
const ENV = { TRAIN_BATCH_SIZE: '4', TRAIN_MAX_STALENESS: '100', TRAIN_MAX_USER_SHARE: '0.25', TRAIN_LR: '0.01', TURNSTREAM_MODEL_ID: 'm' };

describe('turnstream train settings', () => {
  it('without flags, the learner gets the environment settings', () => {
    const s = trainSettings(config(ENV), { consensus: true });
    assert.equal(s.batchSize, 4);
    assert.equal(s.maxStaleness, 100);
    assert.equal(s.maxUserShare, 0.25);
    assert.equal(s.lr, 0.01);
    assert.equal(s.modelId, 'm');
    assert.equal(s.consensus, true);
    assert.equal(s.fromVersion, undefined);
  });

  it('flags override the environment', () => {
    const s = trainSettings(config(ENV), {
      batchSize: '32',
      maxStaleness: '0',
      maxUserShare: '1',
      lr: '1e-5',
      modelId: 'other',
      fromVersion: '3',
      consensus: false,
    });
    assert.deepEqual(
      {
        batchSize: s.batchSize,
        maxStaleness: s.maxStaleness,
        maxUserShare: s.maxUserShare,
        lr: s.lr,
        modelId: s.modelId,
        fromVersion: s.fromVersion,
        consensus: s.consensus,
      },
      { batchSize: 32, maxStaleness: 0, maxUserShare: 1, lr: 1e-5, modelId: 'other', fromVersion: 3, consensus: false },
    );
  });

  it('the weight transport: file by default, TURNSTREAM_WEIGHTS_TRANSPORT, --weights-transport over it; anything else is refused', () => {
    assert.equal(trainSettings(config(), { consensus: true }).weightsTransport, 'file');
    assert.equal(trainSettings(config({ TURNSTREAM_WEIGHTS_TRANSPORT: 'kafka' }), { consensus: true }).weightsTransport, 'kafka');
    assert.equal(
      trainSettings(config({ TURNSTREAM_WEIGHTS_TRANSPORT: 'kafka' }), { consensus: true, weightsTransport: 'file' }).weightsTransport,
      'file',
    );
    assert.throws(
      () => trainSettings(config(), { consensus: true, weightsTransport: 's3' }),
      /--weights-transport="s3": expected one of file, kafka/,
    );
  });

  it('TRAIN_CONSENSUS=0 turns consensus off as --no-consensus does', () => {
    assert.equal(trainSettings(config({ TRAIN_CONSENSUS: '0' }), { consensus: true }).consensus, false);
  });

  it('keeps the settings no flag sets', () => {
    const s = trainSettings(
      config({ TRAIN_STALENESS: 'tis', TRAIN_MAX_WAIT_MS: '1500', TRAIN_KL_COEF: '0.1', TRAINER_METRICS_PORT: '9464' }),
      { batchSize: '8', consensus: true },
    );
    assert.equal(s.staleness, 'tis');
    assert.equal(s.maxWaitMs, 1500);
    assert.equal(s.klCoef, 0.1);
    assert.equal(s.metricsPort, 9464);
    assert.equal(s.lr, undefined, 'unset = the learner default');
  });

  it('a bad flag value is rejected with the flag named, as a bad variable is', () => {
    assert.throws(
      () => trainSettings(config(), { batchSize: '0', maxUserShare: '2', lr: 'fast', fromVersion: '-1', consensus: true }),
      (err: TurnstreamError) => {
        assert.equal(err.code, 'TS_ERR_INVALID_INPUT');
        assert.equal(err.param, '--batch-size');
        assert.match(err.message, /^invalid flags: /);
        assert.match(err.message, /--batch-size="0": expected an integer >= 1/);
        assert.match(err.message, /--max-user-share="2": expected a number > 0 and <= 1/);
        assert.match(err.message, /--lr="fast": expected a number > 0/);
        assert.match(err.message, /--from-version="-1": expected an integer >= 0/);
        return true;
      },
    );
  });
});
