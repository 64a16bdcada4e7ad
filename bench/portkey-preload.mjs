// Preloaded into the Portkey gateway (node --import) by the benchmarks, so that its streaming works
// on Node 20. Portkey 1.15.2 adds headers to the upstream Response it got from fetch; on Node 20
// a fetched Response's headers are immutable, so every stream fails with `TypeError: immutable`.
// This wraps streamed upstream responses in a new Response with the same status, body and (now
// writable) headers. Non-streaming responses are left as they are (they work unchanged).
const originalFetch = globalThis.fetch;
globalThis.fetch = async function fetchWithWritableStreamHeaders(...args) {
  const response = await originalFetch.apply(this, args);
  if (!(response.headers.get('content-type') ?? '').includes('text/event-stream')) return response;
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers: new Headers(response.headers) });
};
