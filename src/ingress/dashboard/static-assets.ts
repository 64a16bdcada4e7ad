import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

// The dashboard's front end needs no build: its own files (web/dashboard) and a few ES modules
// straight from node_modules are read once, compressed once and served from memory. The only
// rewrite is the one bare import in Preact's hooks module, so the browser needs no import map
// (an import map would be an inline script, which the Content-Security-Policy forbids).

export interface Asset {
  body: Buffer;
  gzipped: Buffer;
  contentType: string;
  etag: string;
}

const contentTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
};

export const webDirectory = fileURLToPath(new URL('../../../web/dashboard/', import.meta.url));

/** Served at /dashboard/vendor/<name>: a file of an installed package, and bare imports to rewrite into relative ones. */
const vendorFiles: Record<string, { packageName: string; file: string; imports?: Record<string, string> }> = {
  'preact.js': { packageName: 'preact', file: 'dist/preact.mjs' },
  'hooks.js': { packageName: 'preact', file: 'hooks/dist/hooks.mjs', imports: { preact: './preact.js' } },
  'htm.js': { packageName: 'htm', file: 'dist/htm.mjs' },
  'uplot.js': { packageName: 'uplot', file: 'dist/uPlot.esm.js' },
  'uplot.css': { packageName: 'uplot', file: 'dist/uPlot.min.css' },
};

/** The folder of an installed package (its exports may hide the files we serve, so walk up from its entry). */
function packageRoot(require: NodeJS.Require, packageName: string): string {
  let directory = dirname(require.resolve(packageName));
  for (;;) {
    const manifest = join(directory, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === packageName) return directory;
    const parent = dirname(directory);
    if (parent === directory) throw new Error(`Cannot find the folder of the installed package '${packageName}'.`);
    directory = parent;
  }
}

function asset(name: string, body: Buffer): Asset {
  return {
    body,
    gzipped: gzipSync(body, { level: 9 }),
    contentType: contentTypes[extname(name)] ?? 'application/octet-stream',
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
  };
}

function rewriteImports(source: string, imports: Record<string, string>): string {
  let text = source;
  for (const [bare, relative] of Object.entries(imports)) {
    const pattern = new RegExp(`(\\bfrom\\s*|\\bimport\\s*\\(?\\s*)(["'])${bare.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\2`, 'g');
    if (!pattern.test(text)) throw new Error(`Dashboard vendor module no longer imports '${bare}'; update static-assets.ts.`);
    text = text.replace(pattern, `$1$2${relative}$2`);
  }
  // Source maps are not shipped; a dangling reference only makes developer tools ask for a 404.
  return text.replace(/\n?\/\/# sourceMappingURL=\S+\s*$/, '\n');
}

export interface AssetTable {
  /** index.html, served at /dashboard/. */
  page: Asset;
  /** web/dashboard files by name, served at /dashboard/assets/<name>. */
  files: Map<string, Asset>;
  /** Library modules by name, served at /dashboard/vendor/<name>. */
  vendor: Map<string, Asset>;
}

export function loadAssets(directory = webDirectory): AssetTable {
  const files = new Map<string, Asset>();
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    if (entry.isFile() && entry.name !== 'index.html' && !entry.name.startsWith('.')) files.set(entry.name, asset(entry.name, readFileSync(join(directory, entry.name))));
  }
  const require = createRequire(import.meta.url);
  const vendor = new Map<string, Asset>();
  for (const [name, { packageName, file, imports }] of Object.entries(vendorFiles)) {
    const source = readFileSync(join(packageRoot(require, packageName), file), 'utf8');
    vendor.set(name, asset(name, Buffer.from(name.endsWith('.js') ? rewriteImports(source, imports ?? {}) : source)));
  }
  return { page: asset('index.html', readFileSync(join(directory, 'index.html'))), files, vendor };
}
