import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { teacherUpstream } from '../../../stack/index.ts';
import { loadConfig } from '../../../cli/config.ts';

const config = (env: Record<string, string>) => loadConfig(env, '/tmp');

describe('the sample builder teacher (turnstream process, eval, gym)', () => {
  it('none configured: the built-in base checkpoint', () => {
    assert.equal(teacherUpstream(config({})), undefined);
  });

  it('the upstream engine, with its model and key, when no TEACHER_BASE_URL is set', () => {
    assert.deepEqual(teacherUpstream(config({ UPSTREAM_BASE_URL: 'http://up/v1', UPSTREAM_MODEL: 'big', UPSTREAM_API_KEY: 'uk' })), {
      baseUrl: 'http://up/v1',
      model: 'big',
      apiKey: 'uk',
    });
  });

  it('TEACHER_* win, and the upstream key is not sent to another teacher', () => {
    const c = config({ UPSTREAM_BASE_URL: 'http://up/v1', UPSTREAM_API_KEY: 'uk', TEACHER_BASE_URL: 'http://t/v1' });
    assert.deepEqual(teacherUpstream(c), { baseUrl: 'http://t/v1', model: 'teacher', apiKey: undefined });
    assert.equal(teacherUpstream(config({ TEACHER_BASE_URL: 'http://t/v1', TEACHER_MODEL: 'm', TEACHER_API_KEY: 'tk' }))?.apiKey, 'tk');
  });
});
