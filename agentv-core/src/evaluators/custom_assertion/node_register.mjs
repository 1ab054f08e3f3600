// `node --import` this file: registers node_hooks.mjs.
import { register } from 'node:module';

register('./node_hooks.mjs', import.meta.url);
