// htm bound to Preact: JSX-like templates with no build step.
import { h } from '../vendor/preact.js';
import htm from '../vendor/htm.js';

export const html = htm.bind(h);
