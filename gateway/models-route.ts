/** `GET /v1/models`: the models the engine serves, as OpenAI lists them (`{ object: 'list', data }`). */
import type { FastifyPluginAsync } from 'fastify';
import type { Engine } from './engine.ts';

export interface ModelsRouteDeps {
  engine: Pick<Engine, 'models'>;
}

export const modelsRoute: FastifyPluginAsync<ModelsRouteDeps> = async (app, { engine }) => {
  app.get('/v1/models', async () => ({ object: 'list', data: await engine.models() }));
};
