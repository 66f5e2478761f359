/* The theme reads its light/dark mode from the reader's last choice, else from a default this book's
   theme leaves empty, and logs an error on every page when it finds none. Before its script runs (at
   DOMContentLoaded), "auto": the reader's system setting, which is what the theme then falls back to. */
if (!document.documentElement.dataset.mode) {
  document.documentElement.dataset.mode = "auto";
}
