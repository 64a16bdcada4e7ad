import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedGateway } from '../../src/embedded-gateway.js';
import { testCatalogYaml, type TestCatalogOptions } from './test-catalog.js';

// Starts a gateway the way a user would run it, pointed at the provider doubles through a catalog
// file. `kind` selects the deployment; the same behaviour suite runs against each.

export type DeploymentKind = 'embedded' | 'scaled';

export interface TestDeployment {
  kind: DeploymentKind;
  /** Base URLs of the ingress instances; requests may go to any of them. */
  urls: string[];
  adminToken: string;
  /** Picks an ingress URL, alternating between instances. */
  url(): string;
  close(): Promise<void>;
}

export const testAdminToken = 'sb-admin-test-token-5f9c2e7a1d3b';
export const testUpstreamKey = 'upstream-secret-key';

export interface HarnessOptions extends TestCatalogOptions {
  environment?: Record<string, string>;
}

export function testEnvironment(options: HarnessOptions, dataDir: string): Record<string, string> {
  const catalogPath = join(dataDir, 'catalog.yaml');
  writeFileSync(catalogPath, testCatalogYaml(options));
  return {
    PATH: process.env.PATH ?? '',
    PORT: '0',
    HOST: '127.0.0.1',
    SWITCHBOARD_DATA_DIR: dataDir,
    SWITCHBOARD_CATALOG: catalogPath,
    SWITCHBOARD_ADMIN_TOKEN: testAdminToken,
    SB_TEST_UPSTREAM_KEY: testUpstreamKey,
    LOG_LEVEL: 'silent',
    SWITCHBOARD_DRAIN_DEADLINE_MS: '2000',
    ...options.environment,
  };
}

export async function startEmbeddedDeployment(options: HarnessOptions): Promise<TestDeployment> {
  const dataDir = mkdtempSync(join(tmpdir(), 'switchboard-test-'));
  const gateway = await startEmbeddedGateway({ environment: testEnvironment(options, dataDir) });
  return {
    kind: 'embedded',
    urls: [gateway.url],
    adminToken: gateway.adminToken,
    url: () => gateway.url,
    async close() {
      await gateway.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

type DeploymentStarter = (options: HarnessOptions) => Promise<TestDeployment>;
const starters: Partial<Record<DeploymentKind, DeploymentStarter>> = { embedded: startEmbeddedDeployment };

/** Lets the scaled-out harness register itself without this file importing Redis code. */
export function registerDeploymentStarter(kind: DeploymentKind, starter: DeploymentStarter): void {
  starters[kind] = starter;
}

export function startDeployment(kind: DeploymentKind, options: HarnessOptions): Promise<TestDeployment> {
  const starter = starters[kind];
  if (!starter) throw new Error(`No starter registered for the ${kind} deployment.`);
  return starter(options);
}
