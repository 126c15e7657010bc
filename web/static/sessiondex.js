// sessiondex web view: the copy buttons, and the jump to a search hit. No inline
// scripts anywhere (the pages' Content-Security-Policy allows only this file).
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

// A search result links to its best message (#msg-<uuid>). When that message is not on
// the page (rewound, or compacted away), show the first hit that is.
document.addEventListener("DOMContentLoaded", () => {
  const hash = window.location.hash;
  if (!hash.startsWith("#msg-") || document.getElementById(hash.slice(1))) return;
  const hit = document.querySelector("article.msg.hit");
  if (!hit) return;
  hit.classList.add("target");
  hit.scrollIntoView({ block: "start" });
});
