// Builds the UI into ui/dist; scripts/embed-ui.py compiles ui/dist into the server binary.
import { defineConfig } from "vite";

export default defineConfig({
  base: "/",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    // One JS and one CSS file, no inline script or style (the server's CSP forbids them).
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
  },
});
