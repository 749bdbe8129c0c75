import '@testing-library/jest-dom/vitest';
import { afterEach } from 'vitest';
import { cleanup } from '@testing-library/react';

afterEach(() => {
  cleanup();
  sessionStorage.clear();
});

// a desktop-wide window: PatternFly keeps the sidebar open from 1200 px on
Object.defineProperty(window, 'innerWidth', { configurable: true, writable: true, value: 1400 });
