'use strict';
// The ONNX Runtime side of tools/modelbench: it reads one JSON command per
// line on stdin and answers one JSON line on stdout.
//   {"cmd":"load","name":N,"path":P,"threads":T}          -> {"ok":true}
//   {"cmd":"run","name":N,"input":I,"type":"float32"|"int64","shape":[..],"range":R,"mintime":S}
//        -> {"iters":n,"seconds":s}  (after one warm-up run)
//   {"cmd":"infer","name":N,"input":I,"shape":[..],"data":[..],"output":O}  (float32 input)
//        -> {"output":[..]}  (output O's values)
//   {"cmd":"profile","path":P,"threads":T,"prefix":F,"input":I,"type":..,"shape":[..],"range":R,"mintime":S}
//        -> {"runs":n,"ms":m,"nodes":[[name,op,us],..]}  (a session of its own with
//           ONNX Runtime's profiling on, its file written from prefix F and removed:
//           each node's median kernel time over the runs, in the order first run)
const ort = require('onnxruntime-node');
const fs = require('fs');
const path = require('path');
const readline = require('readline');
const sessions = new Map();
let seed = 7;
const rand = () => { seed = (seed * 1103515245 + 12345) >>> 0; return seed / 4294967296; };
function input(type, shape, range) {
  const n = shape.reduce((a, b) => a * b, 1);
  if (type === 'int64') return new ort.Tensor('int64', BigInt64Array.from({ length: n }, () => BigInt(Math.floor(rand() * range))), shape);
  return new ort.Tensor('float32', Float32Array.from({ length: n }, () => rand() * 2 - 1), shape);
}
const rl = readline.createInterface({ input: process.stdin });
rl.on('line', async (line) => {
  const c = JSON.parse(line);
  try {
    if (c.cmd === 'load') {
      sessions.set(c.name, await ort.InferenceSession.create(c.path, {
        intraOpNumThreads: c.threads, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all',
      }));
      console.log(JSON.stringify({ ok: true }));
      return;
    }
    if (c.cmd === 'profile') {
      console.log(JSON.stringify(await profile(c)));
      return;
    }
    const s = sessions.get(c.name);
    if (c.cmd === 'infer') {
      const r = await s.run({ [c.input]: new ort.Tensor('float32', Float32Array.from(c.data), c.shape) });
      console.log(JSON.stringify({ output: Array.from(r[c.output].data) }));
      return;
    }
    const { n, el } = await timed(s, input(c.type, c.shape, c.range), c.input, c.mintime);
    console.log(JSON.stringify({ iters: n, seconds: el }));
  } catch (e) {
    console.log(JSON.stringify({ error: String(e.message || e) }));
  }
});

// timed runs session s on tensor x as input name after one warm-up run,
// for mintime seconds: n runs in el seconds.
async function timed(s, x, name, mintime) {
  const feeds = { [name]: x };
  await s.run(feeds);
  let n = 0;
  const t0 = process.hrtime.bigint();
  let el = 0;
  while (el < mintime) {
    await s.run(feeds);
    n++;
    el = Number(process.hrtime.bigint() - t0) / 1e9;
  }
  return { n, el };
}

async function profile(c) {
  const s = await ort.InferenceSession.create(c.path, {
    intraOpNumThreads: c.threads, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all',
    enableProfiling: true, profileFilePrefix: c.prefix,
  });
  const { n, el } = await timed(s, input(c.type, c.shape, c.range), c.input, c.mintime);
  await s.endProfiling();
  const dir = path.dirname(c.prefix), base = path.basename(c.prefix);
  const file = fs.readdirSync(dir).filter((f) => f.startsWith(base)).map((f) => path.join(dir, f)).sort().pop();
  const events = JSON.parse(fs.readFileSync(file, 'utf8'));
  fs.unlinkSync(file);
  const byNode = new Map();
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    const name = e.name.slice(0, -'_kernel_time'.length);
    if (!byNode.has(name)) byNode.set(name, { op: e.args.op_name, us: [] });
    byNode.get(name).us.push(e.dur);
  }
  const nodes = [];
  for (const [name, v] of byNode) {
    v.us.sort((a, b) => a - b);
    nodes.push([name, v.op, v.us[v.us.length >> 1]]);
  }
  return { runs: n, ms: (el * 1000) / n, nodes };
}
