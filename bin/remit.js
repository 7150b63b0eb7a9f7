#!/usr/bin/env node
// Runs the TypeScript CLI directly through tsx, so `npm install` is all the set-up there is.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
