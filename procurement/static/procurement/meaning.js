// What the episode page's numbers are: each action's figures labelled with their unit
// (from the engine's FIELD_SPECS, sent as page.units), money in the scenario's currency,
// the agreed price of an awarded thread, and the final metrics with their glossary.
"use strict";
window.arenaMeaning = function (units, glossary) {
  const f = window.arenaFormat;
  units = units || { currency: "", requirement_units: {}, figures: {}, default_unit: "unit" };
  glossary = glossary || {};
  const withCurrency = (text) => (units.currency ? `${text} ${units.currency}` : text);

  // A sum of money in the scenario's currency: "12,500 USD".
  function money(x) { return x == null ? "–" : withCurrency(f.money(x)); }

  // The unit of figure `field` on requirement `rid`: "USD / box", "box", "USD", "%".
  function unitOf(field, rid) {
    const item = (rid && units.requirement_units[rid]) || units.default_unit;
    return units.figures[field].unit.replaceAll("{currency}", units.currency).replaceAll("{unit}", item);
  }

  // A unit price on requirement `rid`: "449.58 USD / box".
  function price(x, rid) { return x == null ? "–" : `${f.money(x)} ${unitOf("price", rid)}`; }

  // The figures an action names, in declaration order: [{field, label, text}].
  function figures(action) {
    const a = action && typeof action === "object" ? action : {};
    const out = [];
    for (const [field, spec] of Object.entries(units.figures)) {
      const v = a[field];
      if (v == null || v === "") continue;
      const unit = unitOf(field, a.requirement_id);
      const text = unit === "%" ? `${Math.round(100 * Number(v))} %` : `${f.money(v)} ${unit}`;
      out.push({ field, label: spec.label, text });
    }
    return out;
  }

  // Fills a decision's Terms cell: one labelled line per figure.
  function figureCell(td, action) {
    for (const fig of figures(action)) {
      const line = document.createElement("div");
      line.className = "figure"; line.dataset.field = fig.field;
      const label = document.createElement("span");
      label.className = "figure-label"; label.textContent = fig.label;
      line.append(label, " ", fig.text);
      td.appendChild(line);
    }
    return td;
  }

  // The price a thread was agreed at: its agreed price, or once awarded (the award
  // clears it when a standing counter was taken) the unit price its contracts carry.
  function agreedPrice(thread, contracts) {
    if (thread.agreed_price != null) return thread.agreed_price;
    if (thread.status !== "awarded") return null;
    const mine = (contracts || []).filter((c) => c.supplier_id === thread.supplier_id && c.requirement_id === thread.requirement_id);
    return mine.length ? mine[mine.length - 1].unit_price : null;
  }

  // A metric's label as an abbr (tooltip: meaning, unit, which way is better) that
  // links to its glossary entry.
  function metricTerm(name) {
    const entry = glossary[name] || { label: name.replaceAll("_", " "), title: "" };
    const abbr = document.createElement("abbr");
    abbr.className = "metric"; abbr.dataset.metric = name;
    if (entry.title) abbr.title = entry.title;
    const link = document.createElement("a");
    link.href = `/glossary/#metric-${name}`; link.textContent = entry.label;
    abbr.appendChild(link);
    return abbr;
  }

  // A metric's value with its unit where it has one worth saying (money).
  function metricValue(name, v) {
    if (v == null) return "–"; // a deal metric without a deal: no value
    const entry = glossary[name];
    if (entry && units.currency && entry.unit === units.currency) return money(v);
    return typeof v === "number" && !Number.isInteger(v) ? v.toFixed(3) : String(v);
  }

  // Copies each column's heading onto its cells (data-label), so a table that turns
  // into cards on a phone keeps saying what each value is.
  function labelCells(tr, table) {
    const heads = table.tHead ? [...table.tHead.rows[0].cells] : [];
    [...tr.cells].forEach((td, i) => { if (heads[i]) td.dataset.label = heads[i].textContent; });
  }

  return { money, price, unitOf, figures, figureCell, agreedPrice, metricTerm, metricValue, labelCells };
};
