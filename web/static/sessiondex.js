// sessiondex web view: the copy buttons. No inline scripts anywhere (the pages'
// Content-Security-Policy allows only this file).
"use strict";
document.addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-copy]");
  if (!button) return;
  const source = document.querySelector(button.dataset.copy);
  if (!source) return;
  const text = source.textContent;
  let copied = false;
  try {
    await navigator.clipboard.writeText(text);
    copied = true;
  } catch (error) {
    // No clipboard API (a plain-http page on another host): select the text instead.
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    copied = document.execCommand && document.execCommand("copy");
  }
  const label = button.textContent;
  button.textContent = copied ? "Copied" : "Press Ctrl-C";
  setTimeout(() => { button.textContent = label; }, 1500);
});
