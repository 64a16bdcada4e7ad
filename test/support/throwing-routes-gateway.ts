import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedGateway } from '../../src/embedded-gateway.js';
import { testEnvironment } from './gateway-harness.js';

// An embedded gateway with extra routes that fail on purpose, run as its own process so that a test
// can watch whether it survives. Routes registered through the request wrapper (`context.route`)
// throw or reject inside the handler; the `unwrapped` ones bypass the wrapper, as a careless
// extension would, so their exceptions reach the process itself. Prints its URL when ready.

const dataDir = mkdtempSync(join(tmpdir(), 'switchboard-throwing-'));
const gateway = await startEmbeddedGateway({
  environment: testEnvironment({ openAiUrl: process.argv[2] ?? 'http://127.0.0.1:9/v1' }, dataDir),
  extend: (app, context) => {
    app.get('/test/throws', context.route('test throws', {}, () => {
      throw new TypeError('failed on purpose');
    }));
    app.get('/test/rejects', context.route('test rejects', {}, async () => {
      await Promise.resolve();
      throw new RangeError('failed on purpose, later');
    }));
    app.get('/test/unwrapped-throws', (res) => {
      res.onAborted(() => undefined);
      res.end('partial');
      throw new TypeError('escaped the wrapper');
    });
    app.get('/test/unwrapped-rejects', (res) => {
      res.onAborted(() => undefined);
      res.end('partial');
      void Promise.reject(new Error('nobody catches this'));
    });
  },
});
process.stdout.write(`throwing gateway listening on ${gateway.url}\n`);
