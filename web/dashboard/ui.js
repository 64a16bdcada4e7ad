// Small building blocks the pages share: modal dialogs, sortable column headers, empty states.
import { useEffect, useRef } from '../vendor/hooks.js';
import { html } from './html.js';

let dialogCount = 0;

/** A native modal <dialog>: focus moves into it, Escape closes it, the page behind is inert. */
export function Dialog({ title, onClose, children, wide }) {
  const ref = useRef(null);
  const id = useRef(`dialog-${(dialogCount += 1)}`);
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog.open) dialog.showModal();
    return () => dialog.open && dialog.close();
  }, []);
  return html`
    <dialog ref=${ref} class=${wide ? 'wide' : ''} aria-labelledby=${id.current} onCancel=${(event) => { event.preventDefault(); onClose(); }}>
      <h2 id=${id.current}>${title}</h2>
      ${children}
    </dialog>`;
}

/** A column header that sorts its table; aria-sort tells assistive technology the current order. */
export function SortHeader({ field, label, sort, onSort, numeric }) {
  const active = sort.field === field;
  const direction = active ? sort.direction : undefined;
  const next = active && direction === 'asc' ? 'desc' : 'asc';
  return html`
    <th scope="col" class=${numeric ? 'num' : ''} aria-sort=${active ? (direction === 'asc' ? 'ascending' : 'descending') : 'none'}>
      <button type="button" class="sort" onClick=${() => onSort({ field, direction: next })}>
        ${label}<span class="sort-mark" aria-hidden="true">${active ? (direction === 'asc' ? '▲' : '▼') : '↕'}</span>
      </button>
    </th>`;
}

export function sortRows(rows, { field, direction }, value = (row) => row[field]) {
  const factor = direction === 'asc' ? 1 : -1;
  return [...rows].sort((a, b) => {
    const x = value(a);
    const y = value(b);
    if (x === y) return 0;
    if (x === null || x === undefined) return 1;
    if (y === null || y === undefined) return -1;
    return (typeof x === 'string' ? x.localeCompare(y) : x - y) * factor;
  });
}

export function EmptyState({ title, children }) {
  return html`<div class="empty"><h2>${title}</h2>${children}</div>`;
}

/** A table that scrolls sideways on narrow screens instead of squeezing its columns. */
export function TableWrap({ label, children }) {
  return html`<div class="table-wrap" role="region" aria-label=${label} tabindex="0">${children}</div>`;
}
