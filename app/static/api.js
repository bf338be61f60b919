// Thin client for the service's HTTP API (docs/api-contract.md). Paths are relative to the page,
// so the demo also works when the service sits behind a path prefix.

export class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.body = body;
  }
}

/** Human-readable text from an error body: v1 {"detail"} (string or validation list), v2 {"error"}. */
export function errorText(body, fallback) {
  if (!body || typeof body !== "object") return fallback;
  const d = body.detail ?? body.error;
  if (typeof d === "string") return d;
  if (Array.isArray(d)) {
    return d.map((e) => (e && typeof e === "object" ? e.msg || JSON.stringify(e) : String(e))).join("; ");
  }
  if (d != null) return JSON.stringify(d);
  return fallback;
}

async function request(path, { method = "GET", body, signal } = {}) {
  const init = { method, signal, headers: { Accept: "application/json" }, cache: "no-store" };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  const t0 = performance.now();
  const res = await fetch(path, init); // network failures and aborts reject here
  let data = null;
  const text = await res.text();
  const rtt = performance.now() - t0;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    const fallback = `${res.status} ${res.statusText || "error"}`.trim();
    throw new ApiError(res.status, errorText(data, text.slice(0, 200) || fallback), data);
  }
  return { data, rtt };
}

export const api = {
  ready: (signal) => request("v2/health/ready", { signal }),
  health: (signal) => request("health", { signal }),
  models: (signal) => request("v1/models", { signal }),
  /** One digit: `body` is `{image}` (base64) or a drawing's `{strokes, width, height, pen}`. */
  predict: (name, body, signal) =>
    request(`v1/models/${encodeURIComponent(name)}/predict?return_input=true`, {
      method: "POST",
      body,
      signal,
    }),
  attention: (name, body, signal) =>
    request(`v1/models/${encodeURIComponent(name)}/attention`, { method: "POST", body, signal }),
  /** One digit already preprocessed (28x28 0..1 as /read returns it): attention without re-fitting. */
  attentionPixels: (name, input, signal) =>
    request(`v1/models/${encodeURIComponent(name)}/attention`, {
      method: "POST",
      body: { pixels: input.map((row) => row.map((v) => Math.round(v * 255))) },
      signal,
    }),
  /** A whole number: `body` is `{image}` (base64) or a drawing's `{strokes, width, height, pen}`. */
  read: (name, body, signal) =>
    request(`v1/models/${encodeURIComponent(name)}/read?return_input=true`, {
      method: "POST",
      body,
      signal,
    }),
};

export function isAbort(err) {
  return err && (err.name === "AbortError" || err.name === "TimeoutError");
}

/** fetch() rejects with a TypeError when the server cannot be reached at all. */
export function isNetworkError(err) {
  return err instanceof TypeError;
}
