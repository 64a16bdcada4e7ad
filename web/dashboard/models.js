// Models: the catalog with provider, context length, prices and whether the provider is configured.
import { useEffect, useState } from '../vendor/hooks.js';
import { api } from './api.js';
import { count, usd } from './format.js';
import { html } from './html.js';
import { EmptyState, SortHeader, sortRows, TableWrap } from './ui.js';

export function ModelsPage() {
  const [models, setModels] = useState(null);
  const [error, setError] = useState('');
  const [search, setSearch] = useState('');
  const [sort, setSort] = useState({ field: 'id', direction: 'asc' });

  useEffect(() => {
    api('/models').then(({ data }) => setModels(data), (failure) => setError(failure.message));
  }, []);

  if (error) return html`<p class="error" role="alert">Could not load the catalog: ${error}</p>`;
  if (!models) return html`<p class="muted" role="status">Loading models…</p>`;
  if (models.length === 0) {
    return html`<${EmptyState} title="The catalog is empty"><p>Add models to the catalog file (SWITCHBOARD_CATALOG) and restart the gateway.</p><//>`;
  }

  const needle = search.trim().toLowerCase();
  const value = {
    prompt: (model) => model.pricing_usd_per_million.prompt,
    completion: (model) => model.pricing_usd_per_million.completion,
    provider_configured: (model) => (model.provider_configured ? 1 : 0),
  }[sort.field];
  const visible = sortRows(models.filter((model) => !needle || model.id.toLowerCase().includes(needle) || model.provider.toLowerCase().includes(needle)), sort, value);
  const unconfigured = models.filter((model) => !model.provider_configured).length;
  const header = (field, label, numeric) => html`<${SortHeader} field=${field} label=${label} sort=${sort} onSort=${setSort} numeric=${numeric} />`;

  return html`
    <div class="toolbar">
      <div class="field inline">
        <label for="model-search">Search models</label>
        <input id="model-search" type="search" placeholder="Model or provider" value=${search} onInput=${(event) => setSearch(event.currentTarget.value)} />
      </div>
      <p class="muted push">${count(models.length)} models${unconfigured ? html` · <strong>${unconfigured}</strong> need a provider key` : ''}</p>
    </div>
    ${visible.length === 0
      ? html`<${EmptyState} title="No models match"><p>Clear the search to see the whole catalog.</p><//>`
      : html`
        <${TableWrap} label="Model catalog">
          <table>
            <caption class="visually-hidden">Model catalog; prices in US dollars per million tokens</caption>
            <thead><tr>
              ${header('id', 'Model')}
              ${header('provider', 'Provider')}
              ${header('context_length', 'Context', true)}
              ${header('prompt', 'Prompt / 1M', true)}
              ${header('completion', 'Completion / 1M', true)}
              ${header('provider_configured', 'Provider configured')}
            </tr></thead>
            <tbody>
              ${visible.map((model) => html`
                <tr key=${model.id}>
                  <th scope="row"><code>${model.id}</code></th>
                  <td>${model.provider}</td>
                  <td class="num">${count(model.context_length)}</td>
                  <td class="num">${usd(model.pricing_usd_per_million.prompt)}</td>
                  <td class="num">${usd(model.pricing_usd_per_million.completion)}</td>
                  <td>${model.provider_configured
                    ? html`<span class="badge active">Yes</span>`
                    : html`<span class="badge revoked">No</span> <span class="muted">set the provider's API key variable</span>`}</td>
                </tr>`)}
            </tbody>
          </table>
        <//>`}`;
}
