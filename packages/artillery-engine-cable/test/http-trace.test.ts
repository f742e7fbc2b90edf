// NODE_DEBUG=cable for a sign-in (issue 50): each HTTP hop is one line, its method, URL, status and
// redirect target, every query value masked (a token rides there), through the real CLI.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { counter, runArtillery } from "cable-test-servers";
import { afterAll, beforeAll, expect, test } from "vitest";

const TOKEN = "tok-4f2a9c-secret";
let app: http.Server;
let base: string;

beforeAll(async () => {
  app = http.createServer((req, res) => {
    const url = new URL(req.url!, base);
    if (url.pathname === "/login") return void res.writeHead(302, { Location: `/dashboard?session=${TOKEN}` }).end();
    if (url.pathname === "/dashboard") return void res.writeHead(200, { "Content-Type": "text/html" }).end("<p>no id here</p>");
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => app.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => app.close(resolve)));

test("each hop of a step is a trace line, query values masked; the failed capture says where the answer came from", async () => {
  const run = await runArtillery({
    script: {
      config: { target: "ws://127.0.0.1:1/cable", engines: { cable: {} }, cable: { http: base, timeout: 3 }, phases: [{ duration: 1, arrivalCount: 1 }] },
      scenarios: [{ engine: "cable", flow: [{ post: { name: "login", url: `/login?token=${TOKEN}`, form: { password: TOKEN }, capture: { regexp: 'data-id="(\\d+)"', group: 1, as: "id" } } }] }],
    },
    env: { NODE_DEBUG: "cable" },
  });
  expect(counter(run.report!, "errors.cable.capture_failed"), run.output).toBe(1);
  expect(run.output).toContain(`http POST ${base}/login?token=…: HTTP 302 → ${base}/dashboard?session=…`);
  expect(run.output).toContain(`http GET ${base}/dashboard?session=…: HTTP 200`);
  expect(run.output).toMatch(/cable\.capture_failed \(capture\): POST \/login → GET \/dashboard: nothing to capture as id \(HTTP 200, 17 bytes of text\/html\)/);
  expect(run.output).not.toContain(TOKEN);
});
