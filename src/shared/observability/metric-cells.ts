import { Counter, Histogram, type Registry } from 'prom-client';

// Counters and histograms whose updates cost a few Map lookups and additions: prom-client builds a
// label object, validates it and hashes it into a string on every inc() and observe(), which is most
// of what metrics cost a request. Here the label values (always the same few strings) lead through
// nested Maps to a cell that is updated in place; the Prometheus text is built from the cells only
// when scraped, by overriding get() of prom-client's own classes, so the registry, the exposition
// format and the default process metrics stay prom-client's.

declare module 'prom-client' {
  // prom-client's registry renders a histogram from this method (declared in its JavaScript, not in
  // its type declarations); CellHistogram supplies its own.
  interface Histogram<T extends string> {
    getForPromString(): ReturnType<Histogram<T>['get']>;
  }
}

interface Branch<C> {
  children: Map<string, Branch<C>>;
  cell?: C;
}

/** Cells by label values, one level of Map per label. */
class CellTree<C> {
  private readonly root: Branch<C> = { children: new Map() };

  constructor(private readonly create: () => C) {}

  cell(values: readonly string[]): C {
    let branch = this.root;
    for (let index = 0; index < values.length; index++) {
      const value = values[index]!;
      let next = branch.children.get(value);
      if (!next) {
        next = { children: new Map() };
        branch.children.set(value, next);
      }
      branch = next;
    }
    return (branch.cell ??= this.create());
  }

  /** Every cell with its label values, in the order they were first used. */
  *entries(branch = this.root, path: string[] = []): Generator<[string[], C]> {
    if (branch.cell) yield [path, branch.cell];
    for (const [value, child] of branch.children) yield* this.entries(child, [...path, value]);
  }

  clear(): void {
    this.root.children.clear();
    delete this.root.cell;
  }
}

function labelsOf<N extends string>(names: readonly N[], values: readonly string[]): Partial<Record<N, string>> {
  const labels: Partial<Record<N, string>> = {};
  names.forEach((name, index) => (labels[name] = values[index]));
  return labels;
}

interface FamilyOptions<N extends string> {
  name: string;
  help: string;
  labelNames: readonly N[];
  registers: Registry[];
}

interface CounterCell {
  value: number;
}

export class CellCounter<N extends string> extends Counter<N> {
  private readonly cells = new CellTree<CounterCell>(() => ({ value: 0 }));
  private readonly names: readonly N[];

  constructor(options: FamilyOptions<N>) {
    super(options);
    this.names = options.labelNames;
  }

  /** Adds to the series of these label values, given in labelNames order. */
  add(values: readonly string[], amount = 1): void {
    this.cells.cell(values).value += amount;
  }

  override async get(): ReturnType<Counter<N>['get']> {
    const values = [];
    for (const [labelValues, cell] of this.cells.entries()) values.push({ labels: labelsOf(this.names, labelValues), value: cell.value });
    // The base object carries name, help, type and aggregator; its own series are never used.
    return { ...(await super.get()), values };
  }

  override reset(): void {
    super.reset();
    // prom-client's constructor calls reset() before this class's fields are set.
    if (this.cells !== undefined) this.cells.clear();
  }
}

interface HistogramCell {
  /** Observations per bucket, not cumulative; the last slot is +Inf. */
  counts: Float64Array;
  sum: number;
  count: number;
}

export class CellHistogram<N extends string> extends Histogram<N | 'le'> {
  private readonly cells: CellTree<HistogramCell>;
  private readonly names: readonly N[];
  private readonly bounds: readonly number[];

  constructor(options: FamilyOptions<N> & { buckets: number[] }) {
    super(options);
    this.names = options.labelNames;
    this.bounds = [...options.buckets].sort((a, b) => a - b);
    this.cells = new CellTree(() => ({ counts: new Float64Array(this.bounds.length + 1), sum: 0, count: 0 }));
  }

  /** Records one observation in the series of these label values, given in labelNames order. */
  record(values: readonly string[], value: number): void {
    const cell = this.cells.cell(values);
    const bounds = this.bounds;
    let index = 0;
    while (index < bounds.length && value > bounds[index]!) index++;
    cell.counts[index]! += 1;
    cell.sum += value;
    cell.count += 1;
  }

  override get(): ReturnType<Histogram<N | 'le'>['get']> {
    return this.getForPromString();
  }

  override async getForPromString(): ReturnType<Histogram<N | 'le'>['get']> {
    // The base object carries name, help, type and aggregator; its own series are never used.
    const base = await super.getForPromString();
    const values = [];
    for (const [labelValues, cell] of this.cells.entries()) {
      const labels = labelsOf<N | 'le'>(this.names, labelValues);
      let cumulative = 0;
      for (let index = 0; index <= this.bounds.length; index++) {
        cumulative += cell.counts[index]!;
        const le = index < this.bounds.length ? this.bounds[index]! : '+Inf';
        values.push({ metricName: `${base.name}_bucket`, labels: { ...labels, le }, value: cumulative });
      }
      values.push({ metricName: `${base.name}_sum`, labels, value: cell.sum });
      values.push({ metricName: `${base.name}_count`, labels, value: cell.count });
    }
    return { ...base, values };
  }

  override reset(): void {
    super.reset();
    // prom-client's constructor calls reset() before this class's fields are set.
    if (this.cells !== undefined) this.cells.clear();
  }
}
