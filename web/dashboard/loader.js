import { useCallback, useEffect, useState } from '../vendor/hooks.js';

// What a page shows is loaded when it opens and again after every change it makes. `fetchAll`
// resolves to the page's data; `data` is null until the first load. A failed reload keeps what
// the page already shows and sets `error` beside it.
export function useLoader(fetchAll) {
  const [state, setState] = useState({ data: null, error: '' });
  // The fetch of the first render serves the page's whole life, as a page's load always has.
  const reload = useCallback(async () => {
    try {
      const data = await fetchAll();
      setState({ data, error: '' });
    } catch (failure) {
      setState((previous) => ({ data: previous.data, error: failure.message }));
    }
  }, []);
  useEffect(() => {
    reload();
  }, [reload]);
  return { ...state, reload };
}
