import { describe, expect, it } from 'vitest';
import { adminRequest, chat, createKey, eventually, hello } from '../support/api-client.js';
import type { DeploymentKind, TestDeployment } from '../support/gateway-harness.js';
import { useGateway } from './gateway-context.js';

// Users, roles, per-user admin tokens and the audit log through the admin API, as automation
// would use them. Scaled out, deployment.url() alternates between the two ingress processes, so
// a role change or a removal made through one is checked on the other.

type Answer = { status: number; body: any; text: string };

async function callAs(deployment: TestDeployment, token: string, method: string, path: string, body?: unknown): Promise<Answer> {
  const response = await fetch(`${deployment.url()}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined, text };
}

interface Expected { action: string; actorId: string; targetId?: string; outcome?: 'success' | 'failure' }

export function describeAccess(kind: DeploymentKind): void {
  const context = useGateway(kind);
  /** Every secret this file creates: none may appear in the audit log. */
  const secrets: string[] = [];
  /** Every admin action this file makes, as the audit log must show it. */
  const expected: Expected[] = [];
  const root = (method: string, path: string, body?: unknown) => adminRequest(context.deployment, method, path, body);
  const as = (token: string, method: string, path: string, body?: unknown) => callAs(context.deployment, token, method, path, body);

  async function user(email: string, role: string, projects: string[] = []): Promise<{ id: string; token: string; tokenId: string }> {
    const created = await root('POST', '/admin/v1/users', { email, role, projects });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const token = await root('POST', '/admin/v1/admin-tokens', { user_id: created.body.id, name: `${role} automation` });
    expect(token.status, JSON.stringify(token.body)).toBe(201);
    expect(token.body.token).toMatch(/^sbat_/);
    secrets.push(token.body.token);
    expected.push({ action: 'user.created', actorId: 'root', targetId: created.body.id }, { action: 'admin_token.created', actorId: 'root', targetId: token.body.id });
    return { id: created.body.id, token: token.body.token, tokenId: token.body.id };
  }

  async function project(name: string): Promise<string> {
    const created = await root('POST', '/admin/v1/projects', { name });
    expect(created.status).toBe(201);
    expected.push({ action: 'project.created', actorId: 'root', targetId: created.body.id });
    return created.body.id;
  }

  async function rootKey(fields: Record<string, unknown>) {
    const key = await createKey(context.deployment, fields);
    secrets.push(key.key);
    expected.push({ action: 'key.created', actorId: 'root', targetId: key.id });
    return key;
  }

  async function auditLog(query = 'limit=1000'): Promise<Answer> {
    const answer = await callAs(context.deployment, context.deployment.adminToken, 'GET', `/admin/v1/audit?${query}`);
    expect(answer.status, answer.text).toBe(200);
    return answer;
  }

  describe('users, roles and admin tokens', () => {
    it('lets a viewer token read everything but change nothing (403 insufficient_role)', async () => {
      const viewer = await user('viewer@example.com', 'viewer');
      const key = await rootKey({ name: 'seen by the viewer', alerts: [{ threshold_percent: 80, webhook_url: 'https://hooks.example.com/services/T0/B0/webhook-credential' }] });
      const me = await as(viewer.token, 'GET', '/admin/v1/me');
      expect(me.body).toMatchObject({ object: 'principal', kind: 'token', id: viewer.tokenId, role: 'viewer', user_id: viewer.id });
      const listed = await as(viewer.token, 'GET', '/admin/v1/keys');
      expect(listed.status).toBe(200);
      expect(listed.body.data.map((k: { id: string }) => k.id)).toContain(key.id);
      // Webhook URLs carry credentials: a viewer sees their origin only, an admin the whole URL.
      expect(listed.text).not.toContain('webhook-credential');
      expect((await as(viewer.token, 'GET', `/admin/v1/keys/${key.id}`)).body.alerts).toEqual([{ threshold_percent: 80, webhook_url: 'https://hooks.example.com/…' }]);
      expect((await root('GET', `/admin/v1/keys/${key.id}`)).body.alerts[0].webhook_url).toContain('webhook-credential');
      secrets.push('webhook-credential');
      for (const path of ['/admin/v1/usage', '/admin/v1/requests', '/admin/v1/projects', '/admin/v1/users', '/admin/v1/admin-tokens', '/admin/v1/audit', `/admin/v1/keys/${key.id}`]) {
        expect((await as(viewer.token, 'GET', path)).status, path).toBe(200);
      }
      const refused = await as(viewer.token, 'POST', '/admin/v1/keys', { name: 'not allowed' });
      expect(refused.status).toBe(403);
      expect(refused.body.error.code).toBe('insufficient_role');
      expected.push({ action: 'key.created', actorId: viewer.tokenId, outcome: 'failure' });
      for (const [method, path, body] of [
        ['PATCH', `/admin/v1/keys/${key.id}`, { rpm: 1 }], ['DELETE', `/admin/v1/keys/${key.id}`], ['POST', `/admin/v1/keys/${key.id}/rotate`],
        ['POST', '/admin/v1/projects', { name: 'no' }], ['POST', '/admin/v1/users', { email: 'x@example.com', role: 'admin' }],
        ['PATCH', `/admin/v1/users/${viewer.id}`, { role: 'admin' }], ['POST', '/admin/v1/admin-tokens', { user_id: viewer.id, name: 'more' }],
        ['PUT', `/admin/v1/keys/${key.id}/payload_logging`, { enabled: true }],
      ] as const) {
        const answer = await as(viewer.token, method, path, body);
        expect([answer.status, answer.body.error?.code], `${method} ${path}`).toEqual([403, 'insufficient_role']);
      }
      expect((await root('GET', `/admin/v1/keys/${key.id}`)).body).toMatchObject({ rpm: null, status: 'active' });
    });

    it('lets a member see and change only the keys, usage and projects of their projects', async () => {
      const mine = await project('member project');
      const theirs = await project('other project');
      const member = await user('member@example.com', 'member', [mine]);
      const other = await rootKey({ name: 'other team key', project_id: theirs });
      const unassigned = await rootKey({ name: 'no project' });

      const created = await as(member.token, 'POST', '/admin/v1/keys', { name: 'member key', project_id: mine });
      expect(created.status, created.text).toBe(201);
      secrets.push(created.body.key);
      expected.push({ action: 'key.created', actorId: member.tokenId, targetId: created.body.id });
      for (const body of [{ name: 'no project' }, { name: 'elsewhere', project_id: theirs }]) {
        const refused = await as(member.token, 'POST', '/admin/v1/keys', body);
        expect([refused.status, refused.body.error.code]).toEqual([403, 'insufficient_role']);
      }

      const listed = await as(member.token, 'GET', '/admin/v1/keys');
      expect(listed.body.data.map((k: { id: string }) => k.id)).toEqual([created.body.id]);
      expect((await as(member.token, 'GET', `/admin/v1/keys/${other.id}`)).status).toBe(403);
      expect((await as(member.token, 'PATCH', `/admin/v1/keys/${other.id}`, { rpm: 5 })).status).toBe(403);
      expect((await as(member.token, 'DELETE', `/admin/v1/keys/${unassigned.id}`)).status).toBe(403);
      expect((await as(member.token, 'PATCH', `/admin/v1/keys/${created.body.id}`, { project_id: theirs })).status).toBe(403);
      expect((await as(member.token, 'PATCH', `/admin/v1/keys/${created.body.id}`, { project_id: null })).status).toBe(403);
      const patched = await as(member.token, 'PATCH', `/admin/v1/keys/${created.body.id}`, { rpm: 50 });
      expect(patched.body).toMatchObject({ rpm: 50, project_id: mine });
      expected.push({ action: 'key.updated', actorId: member.tokenId, targetId: created.body.id });
      expect((await root('GET', `/admin/v1/keys/${other.id}`)).body.rpm).toBeNull();

      const projects = await as(member.token, 'GET', '/admin/v1/projects');
      expect(projects.body.data.map((p: { id: string }) => p.id)).toEqual([mine]);
      expect((await as(member.token, 'GET', `/admin/v1/projects/${theirs}`)).status).toBe(403);
      expect((await as(member.token, 'PATCH', `/admin/v1/projects/${mine}`, { rpm: 1 })).status).toBe(403);
      for (const path of ['/admin/v1/users', '/admin/v1/admin-tokens', '/admin/v1/audit']) expect((await as(member.token, 'GET', path)).status, path).toBe(403);

      // Request logging: a member switches it for their keys only, and reads only their keys' logs.
      const logging = await as(member.token, 'PUT', `/admin/v1/keys/${created.body.id}/payload_logging`, { enabled: true });
      expect(logging.body).toEqual({ key_id: created.body.id, payload_logging: true });
      expected.push({ action: 'key.updated', actorId: member.tokenId, targetId: created.body.id });
      expect((await as(member.token, 'PUT', `/admin/v1/keys/${other.id}/payload_logging`, { enabled: true })).status).toBe(403);
      expect((await root('PUT', `/admin/v1/keys/${other.id}/payload_logging`, { enabled: true })).status).toBe(200);
      expected.push({ action: 'key.updated', actorId: 'root', targetId: other.id });

      // Usage and requests: only their keys' records count.
      context.double.script('alpha', { kind: 'text', text: 'hi', usage: { prompt_tokens: 10, completion_tokens: 2 } });
      const own = await chat(context.deployment, created.body.key, { model: 'svc/alpha', messages: hello });
      expect(own.status).toBe(200);
      const foreign = await chat(context.deployment, other.key, { model: 'svc/alpha', messages: hello });
      expect(foreign.status).toBe(200);
      await eventually(async () => expect((await as(member.token, 'GET', `/admin/v1/requests/${own.headers.get('x-request-id')}/payload`)).status).toBe(200));
      await eventually(async () => expect((await root('GET', `/admin/v1/requests/${foreign.headers.get('x-request-id')}/payload`)).status).toBe(200));
      expect((await as(member.token, 'GET', `/admin/v1/requests/${foreign.headers.get('x-request-id')}/payload`)).status).toBe(403);
      const requests = await eventually(async () => {
        const answer = await as(member.token, 'GET', '/admin/v1/requests');
        expect(answer.body.data).toHaveLength(1);
        return answer;
      });
      expect(requests.body.data[0].key_id).toBe(created.body.id);
      const usage = await as(member.token, 'GET', '/admin/v1/usage');
      expect(usage.body.data).toEqual([expect.objectContaining({ requests: 1, prompt_tokens: 10, completion_tokens: 2 })]);
      const byKey = await as(member.token, 'GET', '/admin/v1/usage?group_by=key');
      expect(byKey.body.data.map((row: { key_id: string }) => row.key_id)).toEqual([created.body.id]);
      expect((await as(member.token, 'GET', `/admin/v1/usage?key_id=${other.id}`)).status).toBe(403);
      expect((await as(member.token, 'GET', `/admin/v1/requests?key_id=${other.id}`)).status).toBe(403);

      const rotated = await as(member.token, 'POST', `/admin/v1/keys/${created.body.id}/rotate`);
      expect(rotated.status).toBe(201);
      secrets.push(rotated.body.key);
      expected.push({ action: 'key.rotated', actorId: member.tokenId, targetId: created.body.id });
      expect((await as(member.token, 'DELETE', `/admin/v1/keys/${created.body.id}`)).body.status).toBe('revoked');
      expected.push({ action: 'key.revoked', actorId: member.tokenId, targetId: created.body.id });
    });

    it('changes a role at once, on every ingress, and stops a removed user\'s token at once', async () => {
      const person = await user('promoted@example.com', 'viewer');
      expect((await as(person.token, 'POST', '/admin/v1/keys', { name: 'before' })).status).toBe(403);
      expect((await root('PATCH', `/admin/v1/users/${person.id}`, { role: 'admin' })).body).toMatchObject({ role: 'admin' });
      expected.push({ action: 'user.updated', actorId: 'root', targetId: person.id });
      for (let i = 0; i < 2; i += 1) {
        const made = await as(person.token, 'POST', '/admin/v1/keys', { name: `after ${i}` });
        expect(made.status, made.text).toBe(201);
        secrets.push(made.body.key);
        expected.push({ action: 'key.created', actorId: person.tokenId, targetId: made.body.id });
      }
      // The promoted user manages users with their own token.
      const colleague = await as(person.token, 'POST', '/admin/v1/users', { email: 'colleague@example.com', role: 'viewer' });
      expect(colleague.status).toBe(201);
      expected.push({ action: 'user.created', actorId: person.tokenId, targetId: colleague.body.id });
      const entry = (await auditLog(`target_id=${person.id}&action=user.updated`)).body.data[0];
      expect(entry).toMatchObject({ actor: { kind: 'root', id: 'root' }, changes: { role: { from: 'viewer', to: 'admin' } }, outcome: 'success' });

      const removed = await root('DELETE', `/admin/v1/users/${person.id}`);
      expect(removed.body).toMatchObject({ status: 'removed' });
      expected.push({ action: 'user.removed', actorId: 'root', targetId: person.id });
      for (let i = 0; i < 2; i += 1) {
        const refused = await as(person.token, 'GET', '/admin/v1/me');
        expect([refused.status, refused.body.error.code]).toEqual([401, 'invalid_admin_token']);
      }
      const tokens = await root('GET', `/admin/v1/admin-tokens?user_id=${person.id}`);
      expect(tokens.body.data).toEqual([expect.objectContaining({ id: person.tokenId, status: 'revoked' })]);
      expect((await root('PATCH', `/admin/v1/users/${person.id}`, { role: 'admin' })).status).toBe(404);
    });

    it('revokes a single admin token at once, leaving the user\'s others working', async () => {
      const person = await user('two-tokens@example.com', 'viewer');
      const second = await root('POST', '/admin/v1/admin-tokens', { user_id: person.id, name: 'second' });
      secrets.push(second.body.token);
      expected.push({ action: 'admin_token.created', actorId: 'root', targetId: second.body.id });
      expect((await root('DELETE', `/admin/v1/admin-tokens/${person.tokenId}`)).body).toMatchObject({ status: 'revoked' });
      expected.push({ action: 'admin_token.revoked', actorId: 'root', targetId: person.tokenId });
      expect((await as(person.token, 'GET', '/admin/v1/keys')).status).toBe(401);
      expect((await as(second.body.token, 'GET', '/admin/v1/keys')).status).toBe(200);
      const list = await root('GET', '/admin/v1/admin-tokens');
      expect(JSON.stringify(list.body)).not.toContain(second.body.token);
      // The revocation names whose token it was; the token stays that user's.
      const [revocation] = (await auditLog(`target_id=${person.tokenId}&action=admin_token.revoked`)).body.data;
      expect(revocation.changes).toEqual({ status: { from: 'active', to: 'revoked' }, user_id: { to: person.id } });
    });

    it("records a project's changes, its alerts' and its deletion with what changed, webhook paths cut", async () => {
      const id = await project('audited project');
      const webhook = 'https://hooks.example.com/services/T9/B9/project-webhook-credential';
      const changed = await root('PATCH', `/admin/v1/projects/${id}`, { budget_usd: 40, alerts: [{ threshold_percent: 90, webhook_url: webhook }] });
      expect(changed.status, JSON.stringify(changed.body)).toBe(200);
      expect((await root('DELETE', `/admin/v1/projects/${id}`)).status).toBe(200);
      expected.push({ action: 'project.updated', actorId: 'root', targetId: id }, { action: 'project.deleted', actorId: 'root', targetId: id });
      const entries = (await auditLog(`target_id=${id}`)).body.data as Array<Record<string, any>>;
      expect(entries.map((entry) => entry.action).sort()).toEqual(['project.created', 'project.deleted', 'project.updated']);
      const update = entries.find((entry) => entry.action === 'project.updated')!;
      expect(update.changes.budget_usd).toEqual({ from: null, to: 40 });
      expect(JSON.stringify(update.changes.alerts)).toContain('hooks.example.com');
      expect(JSON.stringify(entries)).not.toContain('project-webhook-credential');
    });

    it('refuses bad input with clear errors', async () => {
      const bad = async (method: string, path: string, body: unknown, status: number, code: string) => {
        const answer = await root(method, path, body);
        expect([answer.status, answer.body.error?.code], `${method} ${path} ${JSON.stringify(body)}`).toEqual([status, code]);
      };
      await bad('POST', '/admin/v1/users', { email: 'not an email', role: 'viewer' }, 400, 'invalid_value');
      await bad('POST', '/admin/v1/users', { email: 'ok@example.com', role: 'owner' }, 400, 'invalid_value');
      await bad('POST', '/admin/v1/users', { email: 'ok@example.com', role: 'member', projects: ['proj_missing'] }, 400, 'invalid_value');
      await bad('POST', '/admin/v1/users', { email: 'ok@example.com', role: 'viewer', password: 'x' }, 400, 'unknown_parameter');
      await bad('POST', '/admin/v1/users', { email: 'VIEWER@example.com', role: 'viewer' }, 409, 'already_exists');
      await bad('POST', '/admin/v1/admin-tokens', { user_id: 'usr_missing', name: 'x' }, 400, 'invalid_value');
      await bad('PATCH', '/admin/v1/users/usr_missing', { role: 'viewer' }, 404, 'not_found');
      await bad('DELETE', '/admin/v1/admin-tokens/atk_missing', undefined, 404, 'not_found');
      await bad('GET', '/admin/v1/audit?limit=0', undefined, 400, 'invalid_value');
      await bad('GET', '/admin/v1/audit?since=yesterday', undefined, 400, 'invalid_value');
      await bad('GET', '/admin/v1/audit?delete=all', undefined, 400, 'unknown_parameter');
      // A made-up sbat_ token is refused like a wrong root token, and writes nothing.
      const before = (await auditLog()).body.data.length;
      const forged = await as(`sbat_${'A'.repeat(43)}`, 'GET', '/admin/v1/keys');
      expect([forged.status, forged.body.error.code]).toEqual([401, 'invalid_admin_token']);
      expect((await auditLog()).body.data.length).toBe(before);
    });
  });

  describe('the audit log', () => {
    it("records the dashboard's admin actions through the same place as the bearer API's", async () => {
      const base = context.deployment.url();
      const origin = new URL(base).origin;
      const signIn = await fetch(`${base}/dashboard/api/session`, {
        method: 'POST', headers: { origin, 'content-type': 'application/json' }, body: JSON.stringify({ token: context.deployment.adminToken }),
      });
      expect(signIn.status).toBe(200);
      const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
      const { csrf_token: csrf } = (await signIn.json()) as { csrf_token: string };
      const created = await fetch(`${base}/dashboard/api/keys`, {
        method: 'POST', headers: { origin, cookie, 'x-csrf-token': csrf, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'made in the dashboard' }),
      });
      expect(created.status).toBe(201);
      const key = (await created.json()) as { id: string; key: string };
      secrets.push(key.key);
      expected.push({ action: 'key.created', actorId: 'root', targetId: key.id });
      const entry = (await auditLog(`target_id=${key.id}`)).body.data[0];
      expect(entry).toMatchObject({ action: 'key.created', actor: { kind: 'root', id: 'root' }, changes: { name: { to: 'made in the dashboard' } } });
    });

    it('shows every admin action of this file with the right actor, and filters by actor, action, target and time', async () => {
      const log = (await auditLog()).body.data as Array<Record<string, any>>;
      for (const want of expected) {
        const match = log.find((entry) => entry.action === want.action && entry.actor.id === want.actorId
          && (want.targetId === undefined || entry.target_id === want.targetId) && entry.outcome === (want.outcome ?? 'success'));
        expect(match, JSON.stringify(want)).toBeDefined();
        expect(match!.client).toMatch(/\S/);
      }
      const tokenEntry = log.find((entry) => entry.actor.kind === 'token')!;
      expect(tokenEntry.actor.label).toMatch(/@example\.com$/);
      const byActor = (await auditLog(`actor=${encodeURIComponent(tokenEntry.actor.label)}`)).body.data;
      expect(byActor.length).toBeGreaterThan(0);
      expect(byActor.every((entry: any) => entry.actor.label === tokenEntry.actor.label || entry.actor.id === tokenEntry.actor.label)).toBe(true);
      const keys = (await auditLog('action=key.*')).body.data;
      expect(keys.length).toBeGreaterThan(0);
      expect(keys.every((entry: any) => entry.action.startsWith('key.'))).toBe(true);
      expect((await auditLog(`since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).body.data).toEqual([]);
      const page = (await auditLog('limit=2')).body;
      expect(page.data).toHaveLength(2);
      const next = (await auditLog(`limit=2&before=${page.next_before}`)).body.data;
      expect(next[0].id).toBe(log[2]!.id);
    });

    it('never holds a secret: no key, no admin token, no root token', async () => {
      const text = (await auditLog()).text;
      expect(secrets.length).toBeGreaterThan(5);
      for (const secret of [...secrets, context.deployment.adminToken, context.key.key]) {
        expect(text).not.toContain(secret);
        // Nor the secret part alone (after the key's public id, or the token's prefix).
        expect(text).not.toContain(secret.slice(-20));
      }
      expect(text).not.toMatch(/sbat_[A-Za-z0-9_-]{43}/);
      expect(text).not.toMatch(/sk-service-[A-Za-z0-9]{12}-[A-Za-z0-9]{32}/);
    });

    it('has no way to change or delete entries through the API', async () => {
      const before = (await auditLog()).text;
      const id = JSON.parse(before).data[0].id as string;
      for (const [method, path] of [
        ['DELETE', '/admin/v1/audit'], ['DELETE', `/admin/v1/audit/${id}`], ['PATCH', `/admin/v1/audit/${id}`], ['PUT', `/admin/v1/audit/${id}`],
        ['POST', '/admin/v1/audit'], ['GET', `/admin/v1/audit/${id}/delete`],
      ] as const) {
        const answer = await root(method, path, method === 'GET' || method === 'DELETE' ? undefined : { action: 'key.created' });
        expect(answer.status, `${method} ${path}`).toBeGreaterThanOrEqual(404);
        expect(answer.status, `${method} ${path}`).toBeLessThan(500);
      }
      expect((await auditLog()).text).toBe(before);
    });
  });
}
