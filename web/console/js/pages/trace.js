// One trace: its spans (the trace events of every agent that reported one), as a tree by parent
// span, with each span's agent, duration and status (GET /v1/traces/{traceId}; seed 000's
// trace.webUrl opens here).
import { api, seg } from '../api.js';
import { h, replace, link, badge, table, when, facts } from '../dom.js';

/** The spans in tree order (a parent before its children, siblings by time), each with its depth. */
export function tree(spans) {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const children = new Map();
  const roots = [];
  for (const span of spans) {
    const parent = span.parentSpanId && byId.has(span.parentSpanId) && span.parentSpanId !== span.spanId ? span.parentSpanId : null;
    if (parent) {
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(span);
    } else {
      roots.push(span);
    }
  }
  const ordered = [];
  const seen = new Set();
  const walk = (span, depth) => {
    if (seen.has(span)) return; // a span listed twice, or a cycle of parents
    seen.add(span);
    ordered.push({ span, depth });
    for (const child of children.get(span.spanId) ?? []) walk(child, depth + 1);
  };
  for (const root of roots) walk(root, 0);
  for (const span of spans) walk(span, 0); // what a cycle left out
  return ordered;
}

export async function render(main, [id]) {
  const trace = await api(`/v1/traces/${seg(id)}`);
  const rows = tree(trace.spans);
  const agents = [...new Set(trace.spans.map((s) => s.agentId))];
  replace(main,
    h('h1', {}, `Trace ${trace.traceId}`),
    facts([
      ['Spans', `${trace.spans.length}${trace.truncated ? ' (the first ones; more exist)' : ''}`],
      ['Agents', agents.map((a, i) => [i ? ', ' : '', link(`/agents/${encodeURIComponent(a)}`, a)])],
      ['Started', when(trace.spans[0]?.ts)],
    ]),
    h('h2', {}, 'Spans'),
    table('The trace\'s spans, each under its parent', [
      ['Span', (r) => h('span', { class: 'span-name', 'data-depth': r.depth }, `${'· '.repeat(r.depth)}${r.span.name ?? r.span.spanId}`)],
      ['Agent', (r) => link(`/agents/${encodeURIComponent(r.span.agentId)}`, r.span.agentId)],
      ['Duration', (r) => (typeof r.span.durationMs === 'number' ? `${r.span.durationMs} ms` : '')],
      ['Status', (r) => (r.span.status ? badge(r.span.status) : '')],
      ['Span id', (r) => h('code', {}, r.span.spanId)],
    ], rows));
}
