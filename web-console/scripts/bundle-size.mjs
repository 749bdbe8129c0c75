// Gzip sizes of the production build (run after `npm run build`): what the first page loads, the chart chunk, and
// everything; exits 1 over the budget (web-console/README.md says why these numbers).
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

const BUDGET_INITIAL_KIB = 200; // JS + CSS index.html loads before the first paint (sign-in, shell)
const BUDGET_TOTAL_KIB = 500; // every JS + CSS chunk of every page

const dist = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', 'dist');
const assets = path.join(dist, 'assets');
if (!fs.existsSync(assets)) {
  console.error('no dist/assets: run npm run build first');
  process.exit(2);
}
const gz = (f) => zlib.gzipSync(fs.readFileSync(path.join(assets, f)), { level: 9 }).length / 1024;
const files = fs.readdirSync(assets).filter((f) => /\.(js|css)$/.test(f));
const html = fs.readFileSync(path.join(dist, 'index.html'), 'utf8');
const initial = [...html.matchAll(/assets\/([^"]+\.(?:js|css))/g)].map((m) => m[1]);
const initialKiB = initial.reduce((a, f) => a + gz(f), 0);
const totalKiB = files.reduce((a, f) => a + gz(f), 0);
const charts = files.filter((f) => f.startsWith('Charts-')).reduce((a, f) => a + gz(f), 0);
const fonts = fs.readdirSync(assets).filter((f) => f.endsWith('.woff2'))
  .reduce((a, f) => a + fs.statSync(path.join(assets, f)).size / 1024, 0);
console.log(`initial (index.html: ${initial.join(', ')}): ${initialKiB.toFixed(1)} KiB gzip (budget ${BUDGET_INITIAL_KIB})`);
console.log(`charts chunk (lazy): ${charts.toFixed(1)} KiB gzip`);
console.log(`all JS + CSS (${files.length} files): ${totalKiB.toFixed(1)} KiB gzip (budget ${BUDGET_TOTAL_KIB})`);
console.log(`fonts (woff2, fetched when used): ${fonts.toFixed(1)} KiB`);
if (initialKiB > BUDGET_INITIAL_KIB || totalKiB > BUDGET_TOTAL_KIB) {
  console.error('over the bundle budget');
  process.exit(1);
}
