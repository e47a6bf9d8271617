// Drives a live quantserve with the client openapi-typescript and
// openapi-fetch make from openapi.yaml, with their default settings.
// tools/clients starts the server (the repository of
// `go run ./internal/cmd/testrepo`) and sets QUANTSERVE_URL and
// QUANTSERVE_ADMIN_TOKEN; without QUANTSERVE_URL the tests skip, except
// under CI=true, where they fail.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import createClient from "openapi-fetch";
import type { components, paths } from "./schema.js";

type InputTensor = components["schemas"]["InputTensor"];
type TensorData = components["schemas"]["TensorData"];

const baseUrl = process.env.QUANTSERVE_URL ?? "";
if (!baseUrl && process.env.CI === "true") {
  throw new Error("QUANTSERVE_URL is not set: run tools/clients, which starts the server");
}
const skip = baseUrl ? false : "QUANTSERVE_URL is not set: run tools/clients, which starts a server and runs these tests";
// The infer answer is JSON, or JSON followed by binary tensors (Triton's
// binary extension) as application/octet-stream; this client asks for JSON,
// and says so to openapi-fetch, which then types data as the JSON answer.
const client = createClient<paths, "application/json">({ baseUrl });

// numbers reads a response tensor's data as the flat numbers it is.
function numbers(data: TensorData | undefined): number[] {
  assert.ok(Array.isArray(data));
  return data.map((v) => {
    assert.equal(typeof v, "number", `element ${JSON.stringify(v)} is not a number`);
    return v as number;
  });
}

async function infer(model: string, input: InputTensor) {
  return client.POST("/v2/models/{model}/infer", { params: { path: { model } }, body: { inputs: [input] } });
}

test("health and metadata", { skip }, async () => {
  const live = await client.GET("/v2/health/live");
  assert.equal(live.data?.live, true);
  const ready = await client.GET("/v2/health/ready");
  assert.equal(ready.data?.ready, true);
  const head = await client.HEAD("/v2/health/ready");
  assert.equal(head.response.status, 200);

  const server = await client.GET("/v2");
  assert.equal(server.data?.name, "quantserve");
  assert.ok(server.data?.extensions.includes("statistics"));
  assert.ok(server.data?.extensions.includes("model_configuration"));

  const md = await client.GET("/v2/models/{model}", { params: { path: { model: "mnist" } } });
  assert.ok(md.data, JSON.stringify(md.error));
  assert.equal(md.data.platform, "onnx_onnxv1");
  assert.deepEqual(md.data.inputs[0]?.shape, [-1, 784]);
  assert.equal(typeof md.data.parameters?.["kernels"], "string");
  assert.equal(md.data.parameters?.["layers"], 3);

  const doc = await client.GET("/openapi.yaml", { parseAs: "text" });
  assert.ok(typeof doc.data === "string" && doc.data.startsWith("openapi: 3.0.3"));
});

// JavaScript numbers are doubles: FP32 and FP64 values come back exactly,
// and INT64 values as far as a double holds integers (2^53).
test("exact round trips", { skip }, async () => {
  const f32 = [0.1, 1 / 3, -2.5e-30, 3.4028234663852886e38, 1.401298464324817e-45, 16777217].map(Math.fround);
  let r = await infer("identity_fp32", { name: "x", datatype: "FP32", shape: [f32.length], data: f32 });
  assert.ok(r.data, JSON.stringify(r.error));
  assert.deepEqual(numbers(r.data.outputs[0]?.data).map(Math.fround), f32);

  const f64 = [0.1, 1e300, 5e-324, -1 / 3, Number.MAX_VALUE];
  r = await infer("identity_fp64", { name: "x", datatype: "FP64", shape: [f64.length], data: f64 });
  assert.ok(r.data, JSON.stringify(r.error));
  assert.deepEqual(numbers(r.data.outputs[0]?.data), f64);

  const i64 = [16777217, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 0];
  r = await infer("identity_int64", { name: "x", datatype: "INT64", shape: [2, 2], data: i64 });
  assert.ok(r.data, JSON.stringify(r.error));
  assert.equal(r.data.outputs[0]?.datatype, "INT64");
  assert.deepEqual(r.data.outputs[0]?.shape, [2, 2]);
  assert.deepEqual(numbers(r.data.outputs[0]?.data), i64);
});

test("mnist", { skip }, async () => {
  const body = JSON.parse(readFileSync("../../examples/mnist-digit.json", "utf8")) as components["schemas"]["InferenceRequest"];
  const r = await client.POST("/v2/models/{model}/versions/{version}/infer", {
    params: { path: { model: "mnist", version: "1" } },
    body,
  });
  assert.ok(r.data, JSON.stringify(r.error));
  assert.equal(r.data.id, "digit-7");
  const scores = numbers(r.data.outputs[0]?.data);
  assert.equal(scores.indexOf(Math.max(...scores)), 7);
});

test("errors", { skip }, async () => {
  let r = await infer("nope", { name: "x", datatype: "FP32", shape: [1], data: [1] });
  assert.equal(r.response.status, 404);
  assert.match(r.error?.error ?? "", /nope/);
  r = await infer("identity_fp32", { name: "x", datatype: "FP32", shape: [4], data: [1, 2, 3] });
  assert.equal(r.response.status, 400);
  assert.ok(r.error?.error);
  r = await infer("identity_int64", { name: "x", datatype: "INT64", shape: [5, 2], data: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] });
  assert.equal(r.response.status, 400);
  assert.match(r.error?.error ?? "", /max_batch_size/);
  const unload = await client.POST("/v2/repository/models/{model}/unload", { params: { path: { model: "mnist" } } });
  assert.equal(unload.response.status, 401);
});

test("statistics and configuration", { skip }, async () => {
  const path = { params: { path: { model: "identity_int64", version: "1" } } };
  const before = await client.GET("/v2/models/{model}/versions/{version}/stats", path);
  assert.ok(before.data, JSON.stringify(before.error));
  const r = await infer("identity_int64", { name: "x", datatype: "INT64", shape: [3, 2], data: [1, 2, 3, 4, 5, 6] });
  assert.ok(r.data, JSON.stringify(r.error));
  const after = await client.GET("/v2/models/{model}/versions/{version}/stats", path);
  assert.ok(after.data, JSON.stringify(after.error));
  const [b, a] = [before.data.model_stats[0], after.data.model_stats[0]];
  assert.ok(a && b);
  assert.equal(a.inference_count - b.inference_count, 3);
  assert.equal(a.execution_count - b.execution_count, 1);
  assert.equal(a.inference_stats.success.count - b.inference_stats.success.count, 1);
  const all = await client.GET("/v2/models/stats");
  assert.ok((all.data?.model_stats.length ?? 0) >= 4);

  const cfg = await client.GET("/v2/models/{model}/config", { params: { path: { model: "identity_int64" } } });
  assert.ok(cfg.data, JSON.stringify(cfg.error));
  assert.equal(cfg.data.max_batch_size, 4);
  assert.deepEqual(cfg.data.input, [{ name: "x", data_type: "TYPE_INT64", dims: [2] }]);
  assert.equal(cfg.data.version_policy.latest?.num_versions, 1);
  const mnist = await client.GET("/v2/models/{model}/config", { params: { path: { model: "mnist" } } });
  assert.equal(mnist.data?.quantization[0]?.kernels, "int8 per_channel");
});

test("model repository", { skip }, async () => {
  const headers = { Authorization: `Bearer ${process.env.QUANTSERVE_ADMIN_TOKEN ?? ""}` };
  const model = { params: { path: { model: "identity_fp64" } }, headers };
  const state = async () => (await client.POST("/v2/repository/index")).data?.find((e) => e.name === "identity_fp64")?.state;
  assert.equal(await state(), "READY");
  assert.equal((await client.POST("/v2/repository/models/{model}/unload", model)).response.status, 200);
  assert.equal(await state(), "UNAVAILABLE");
  const gone = await client.GET("/v2/models/{model}/ready", { params: { path: { model: "identity_fp64" } } });
  assert.equal(gone.response.status, 404);
  assert.equal((await client.POST("/v2/repository/models/{model}/load", model)).response.status, 200);
  assert.equal(await state(), "READY");
});
