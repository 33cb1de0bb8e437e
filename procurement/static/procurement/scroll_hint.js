// Tables that scroll sideways inside their card say so: a fade on the side that has more
// (classes more-left / more-right) and a line above the table, kept up to date as tables
// fill and the window resizes.
"use strict";
(function () {
  function update(box, hint) {
    const more = box.scrollWidth - box.clientWidth > 2;
    box.classList.toggle("more-left", more && box.scrollLeft > 2);
    box.classList.toggle("more-right", more && box.scrollLeft + box.clientWidth < box.scrollWidth - 2);
    hint.hidden = !more;
  }
  function watch(box) {
    const hint = document.createElement("p");
    hint.className = "scroll-hint"; hint.hidden = true;
    hint.textContent = "Wider than the screen: swipe or scroll sideways for more columns →";
    box.before(hint);
    const again = () => update(box, hint);
    box.addEventListener("scroll", again, { passive: true });
    const seen = new ResizeObserver(again);
    seen.observe(box);
    if (box.firstElementChild) seen.observe(box.firstElementChild);
    again();
  }
  document.querySelectorAll(".scroll").forEach(watch);
})();
