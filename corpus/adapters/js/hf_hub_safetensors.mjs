// Strategy: @huggingface/hub's parseSafetensorsMetadata (the reader the Hub's
// JavaScript client uses for a model's header), run on a local file.  The
// library only reads from a repository over HTTP, so its `fetch` option is
// given a function that answers from the file's bytes (HEAD, ranges and
// 404 for anything else): the real parser runs, on the bytes we choose,
// without a network.  The conformance protocol of validator/conformance/
// adapter.py, in JavaScript:
//
//   node hf_hub_safetensors.mjs FILE          exit 0 accepts (one JSON line of
//                                             tensors; no bytes: header only),
//                                             1 rejects, 2 crashes
//   node hf_hub_safetensors.mjs --probe       {"version": ...}
//   node hf_hub_safetensors.mjs --persistent  the frame protocol of fuzz/README.md
//
// Only the documented SafetensorParseError is a rejection; any other throw
// (a TypeError from a field it trusted, a RangeError) is a crash.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { parseSafetensorsMetadata } from "@huggingface/hub";

const ACCEPT = 0;
const REJECT = 1;
const CRASH = 2;

function version() {
  // The package's exports do not list its package.json: read the file itself.
  const main = createRequire(import.meta.url).resolve("@huggingface/hub");
  const root = main.slice(0, main.lastIndexOf("/dist/"));
  return JSON.parse(readFileSync(`${root}/package.json`, "utf8")).version;
}

function fetchFrom(bytes) {
  // Answers the two requests a single-file parse makes (the file, the
  // optional config.json): ranges of the file, or 404.
  return async (input, init = {}) => {
    const url = input instanceof Request ? input.url : String(input);
    const method = (init.method || "GET").toUpperCase();
    if (!url.includes("/model.safetensors")) {
      return new Response("not found", { status: 404 });
    }
    const headers = new Headers({
      "content-type": "application/octet-stream",
      "accept-ranges": "bytes",
      etag: '"stcheck-local"',
    });
    const range = new Headers(init.headers || {}).get("range");
    if (method === "HEAD") {
      headers.set("content-length", String(bytes.length));
      return new Response(null, { status: 200, headers });
    }
    if (range) {
      const m = /^bytes=(\d+)-(\d*)$/.exec(range.trim());
      if (!m) {
        return new Response(null, { status: 416 });
      }
      const start = Number(m[1]);
      const end = m[2] === "" ? bytes.length - 1 : Math.min(Number(m[2]), bytes.length - 1);
      if (start >= bytes.length || end < start) {
        headers.set("content-range", `bytes */${bytes.length}`);
        return new Response(null, { status: 416, headers });
      }
      headers.set("content-range", `bytes ${start}-${end}/${bytes.length}`);
      headers.set("content-length", String(end - start + 1));
      return new Response(bytes.subarray(start, end + 1), { status: 206, headers });
    }
    headers.set("content-length", String(bytes.length));
    return new Response(bytes, { status: 200, headers });
  };
}

async function load(bytes) {
  const parsed = await parseSafetensorsMetadata({
    repo: "stcheck/local",
    path: "model.safetensors",
    computeParametersCount: true,
    fetch: fetchFrom(bytes),
  });
  return Object.entries(parsed.header)
    .filter(([name]) => name !== "__metadata__")
    .map(([name, info]) => ({
      name,
      dtype: String(info.dtype),
      shape: Array.isArray(info.shape) ? info.shape.map((d) => Number(d)) : [],
      nbytes: null,
      sha256: null,
    }));
}

function oneLine(text) {
  return String(text).replace(/\s+/g, " ").slice(0, 300);
}

function innermost(err) {
  // "file.mjs:LINE (function)" of the innermost frame with a source line: the crash's cause.
  const frames = String(err && err.stack ? err.stack : "").split("\n");
  for (const frame of frames) {
    const m = /^\s*at (?:(\S+) \()?(?:[^()]*\/)?([^/():]+):(\d+):\d+\)?$/.exec(frame);
    if (m) {
      return `${m[2]}:${m[3]} (${m[1] || "anonymous"})`;
    }
  }
  return "?";
}

async function answer(bytes) {
  try {
    await load(bytes);
    return "accept";
  } catch (err) {
    const kind = String((err && err.name) || typeof err).replace(/[^A-Za-z0-9_.-]+/g, "_");
    if (err && err.name === "SafetensorParseError") {
      return oneLine(`reject ${kind}: ${err.message}`);
    }
    return oneLine(`crash ${kind} ${innermost(err)}: ${err && err.message}`);
  }
}

async function persistent() {
  // Frames in (u32 little-endian length, bytes); one answer line out each.
  let pending = Buffer.alloc(0);
  for await (const chunk of process.stdin) {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 4) {
      const size = pending.readUInt32LE(0);
      if (pending.length < 4 + size) {
        break;
      }
      const frame = new Uint8Array(pending.subarray(4, 4 + size));
      pending = pending.subarray(4 + size);
      const line = await answer(frame);
      await new Promise((resolve) => process.stdout.write(line + "\n", resolve));
    }
  }
  return ACCEPT;
}

async function main(args) {
  if (args.length === 1 && args[0] === "--probe") {
    process.stdout.write(JSON.stringify({ version: version() }) + "\n");
    return ACCEPT;
  }
  if (args.length === 1 && args[0] === "--persistent") {
    // The loader's own console output must not reach the protocol's stdout.
    console.log = console.info = console.debug = console.warn;
    return persistent();
  }
  if (args.length !== 1) {
    process.stderr.write("usage: hf_hub_safetensors.mjs FILE | --probe | --persistent\n");
    return CRASH;
  }
  const bytes = new Uint8Array(readFileSync(args[0]));
  try {
    const tensors = await load(bytes);
    process.stdout.write(JSON.stringify({ tensors }) + "\n");
    return ACCEPT;
  } catch (err) {
    if (err && err.name === "SafetensorParseError") {
      process.stderr.write(`reject: ${err.name}: ${oneLine(err.message)}\n`);
      return REJECT;
    }
    process.stderr.write(`crash: ${(err && err.name) || typeof err}: ${oneLine(err && err.message)}\n`);
    process.stderr.write(`${err && err.stack}\n`);
    return CRASH;
  }
}

process.exitCode = await main(process.argv.slice(2));
