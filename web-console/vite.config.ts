/// <reference types="vitest/config" />
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// The control plane serves dist/ at / (Quinoa); in dev mode Vite serves the UI and proxies the REST API to a
// control plane started with ./kvpool up (port 6492).
const controlPlane = process.env.KVPOOL_CONTROL_URL ?? 'http://127.0.0.1:6492';

export default defineConfig({
  plugins: [react()],
  base: '/',
  server: {
    port: 5173,
    proxy: {
      '/api': { target: controlPlane, changeOrigin: false },
      '/q': { target: controlPlane, changeOrigin: false },
    },
  },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 900,
  },
  test: {
    environment: 'jsdom',
    globals: true,
    setupFiles: ['./src/testing/setup.ts'],
    css: false,
    include: ['src/**/*.test.{ts,tsx}'],
  },
});
