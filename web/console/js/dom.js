// Small DOM helpers: elements are built with h(), never from HTML strings, so text from the API
// is always text (no innerHTML anywhere in the console).

/** h('a', {href: '/x', class: 'link'}, 'text', child…): an element with attributes and children. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') {
      el.addEventListener(name.slice(2), value);
    } else if (name === 'dataset') {
      Object.assign(el.dataset, value);
    } else {
      el.setAttribute(name, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
}

/** Replaces the children of `el`. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A link the router handles (same origin, no reload). */
export function link(href, ...children) {
  return h('a', { href, 'data-route': '' }, ...children);
}

/** A status badge; its class gives the colour, its text the status (never colour alone). */
export function badge(status) {
  return h('span', { class: `badge badge-${String(status).replace(/[^a-zA-Z0-9_-]/g, '')}` }, status);
}

/** A definition list from [term, value] pairs (values may be nodes). */
export function facts(pairs) {
  return h('dl', { class: 'facts' }, pairs.filter(([, v]) => v !== undefined && v !== null && v !== '').map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

/** A table: `columns` are [heading, row => cell]. In a box of its own width that scrolls
 * sideways, so a wide table never spills over what stands beside it. */
export function table(caption, columns, rows, empty = 'None.') {
  if (!rows.length) return h('p', { class: 'empty' }, empty);
  return h('div', { class: 'table-scroll' }, h('table', {},
    h('caption', { class: 'visually-hidden' }, caption),
    h('thead', {}, h('tr', {}, columns.map(([heading]) => h('th', { scope: 'col' }, heading)))),
    h('tbody', {}, rows.map((row) => h('tr', {}, columns.map(([, cell]) => h('td', {}, cell(row))))))));
}

/** A date (ISO string or Unix ms) as local time, in a <time> element. */
export function when(value) {
  if (value === undefined || value === null) return '';
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  return h('time', { datetime: date.toISOString(), title: date.toISOString() }, date.toLocaleString());
}

/** A fraction (0.25) as a percentage (25.0%). */
export function percent(value) {
  return value === undefined || value === null ? '' : `${(Number(value) * 100).toFixed(1)}%`;
}

export function usd(value) {
  return value === undefined || value === null ? '' : `$${Number(value).toFixed(4)}`;
}

const SVG = 'http://www.w3.org/2000/svg';

/** A sparkline of `values` as an SVG polyline, with a text alternative for screen readers. */
export function sparkline(values, label) {
  const width = 120, height = 28;
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.setAttribute('width', width);
  svg.setAttribute('height', height);
  svg.setAttribute('class', 'sparkline');
  svg.setAttribute('role', 'img');
  const numbers = values.map(Number).filter(Number.isFinite);
  const last = numbers.length ? numbers[numbers.length - 1] : undefined;
  svg.setAttribute('aria-label', `${label}: ${numbers.length} points${last === undefined ? '' : `, latest ${last}`}`);
  if (numbers.length) {
    const max = Math.max(...numbers), min = Math.min(0, ...numbers), span = max - min || 1;
    const step = numbers.length > 1 ? width / (numbers.length - 1) : 0;
    const points = numbers.map((v, i) => `${(i * step).toFixed(1)},${(height - 2 - ((v - min) / span) * (height - 4)).toFixed(1)}`);
    const line = document.createElementNS(SVG, 'polyline');
    line.setAttribute('points', points.join(' '));
    line.setAttribute('fill', 'none');
    line.setAttribute('stroke', 'currentColor');
    line.setAttribute('stroke-width', '1.5');
    svg.append(line);
  }
  return svg;
}
