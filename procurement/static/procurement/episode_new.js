// The start form: under each drop-down, what the chosen scenario or policy is for.
"use strict";
(function () {
  for (const select of document.querySelectorAll("#start-episode select")) {
    const about = document.createElement("span");
    about.className = "helptext about";
    about.setAttribute("aria-live", "polite");
    select.after(about);
    const show = () => { about.textContent = select.selectedOptions[0]?.dataset.description || ""; };
    select.addEventListener("change", show);
    show();
  }
})();
