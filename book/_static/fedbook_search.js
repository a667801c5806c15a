/* The book's search (Sphinx's searchtools.js), adjusted for readers:
 *
 * - accent-insensitive: "Renyi" finds "Rényi".  Sphinx's index keeps each stemmed word with its accents;
 *   when the index is set, every accented term is also filed under its folded spelling (NFD, combining
 *   marks removed), so that a query typed without accents finds it; a Greek letter standing as a word is
 *   also filed under its name ("λ" under "lambda").
 * - chapters first: a word the chapters teach ("lambda", "epsilon", "crossover") matches many documented
 *   functions too, and Sphinx scores a function-name match (and a glossary entry) above a word in a chapter's
 *   text.  The reference pages (glossary, notation, bibliography, reference) are ranked after the chapters and
 *   the API pages (book/api_*) after everything else; within each group Sphinx's order is kept.
 * - readable snippets: the text around a hit is taken from the page's HTML, whose math is TeX source until
 *   MathJax typesets it; each math element is replaced by plain symbols (\lambda^* -> λ*) first, and code
 *   cells' source and code blocks are left out, so that the snippet shows the prose around the word.
 */
(function () {
  "use strict";
  const fold = (s) => s.normalize("NFD").replace(/[\u0300-\u036f]/g, "");
  const merge = (table) => {
    if (!table) return;
    for (const term of Object.keys(table)) {
      const plain = fold(term);
      if (plain === term) continue;
      const have = table[plain] === undefined ? [] : [].concat(table[plain]);
      table[plain] = Array.from(new Set(have.concat([].concat(table[term]))));
    }
  };
  /* a Greek letter that stands alone as a word ("The optimal λ") is also filed under its name ("lambda"), so
     that a reader typing the name finds the sections that are about it */
  const GREEK = {"α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "epsilon", "ζ": "zeta", "η": "eta",
                 "θ": "theta", "κ": "kappa", "λ": "lambda", "μ": "mu", "ν": "nu", "ξ": "xi", "π": "pi", "ρ": "rho",
                 "σ": "sigma", "τ": "tau", "φ": "phi", "χ": "chi", "ψ": "psi", "ω": "omega"};
  const nameGreek = (table) => {
    if (!table) return;
    for (const [letter, name] of Object.entries(GREEK)) {
      if (table[letter] === undefined) continue;
      const have = table[name] === undefined ? [] : [].concat(table[name]);
      table[name] = Array.from(new Set(have.concat([].concat(table[letter]))));
    }
  };
  const foldIndex = (index) => {
    if (index && !index.__fedbookFolded) {
      merge(index.terms);
      merge(index.titleterms);
      nameGreek(index.terms);
      nameGreek(index.titleterms);
      index.__fedbookFolded = true;
    }
    return index;
  };

  /* chapters, then the reference pages, then the API pages: scores lowered by more than any score's range */
  const API_PAGE = /(^|\/)api_[^/]*$/;
  const REFERENCE_PAGE = /(^|\/)(glossary|notation|bibliography|reference|genindex|py-modindex)$/;
  const score = (result) => {
    const docname = result[0] || "", s = result[4];
    return API_PAGE.test(docname) ? s - 2000 : REFERENCE_PAGE.test(docname) ? s - 1000 : s;
  };

  /* TeX source -> plain symbols, for search snippets (not a TeX renderer: the common commands only) */
  const SYMBOLS = {
    alpha: "α", beta: "β", gamma: "γ", Gamma: "Γ", delta: "δ", Delta: "Δ", epsilon: "ε", varepsilon: "ε",
    zeta: "ζ", eta: "η", theta: "θ", Theta: "Θ", kappa: "κ", lambda: "λ", Lambda: "Λ", mu: "μ", nu: "ν",
    xi: "ξ", Xi: "Ξ", pi: "π", rho: "ρ", sigma: "σ", Sigma: "Σ", tau: "τ", phi: "φ", varphi: "φ", Phi: "Φ",
    chi: "χ", psi: "ψ", omega: "ω", Omega: "Ω", sum: "Σ", prod: "Π", infty: "∞", le: "≤", leq: "≤", ge: "≥",
    geq: "≥", ne: "≠", neq: "≠", approx: "≈", sim: "~", cdot: "·", times: "×", pm: "±", in: "∈", to: "→",
    rightarrow: "→", leftarrow: "←", mid: "|", ldots: "…", cdots: "…", dots: "…", sqrt: "√", partial: "∂",
    nabla: "∇", mathbb: "", mathcal: "", mathrm: "", mathbf: "", boldsymbol: "", operatorname: "", text: "",
    textrm: "", mathit: "", left: "", right: "", big: "", Big: "", bigg: "", Bigg: "", displaystyle: "",
    quad: " ", qquad: " ", ",": " ", ";": " ", "!": "", lVert: "‖", rVert: "‖", Vert: "‖", lvert: "|",
    rvert: "|", langle: "⟨", rangle: "⟩", star: "*", ast: "*", top: "ᵀ", log: "log", exp: "exp", min: "min",
    max: "max", arg: "arg", argmin: "argmin", Pr: "Pr", E: "E", Var: "Var", tfrac: "", dfrac: "", frac: "",
    hat: "", bar: "", tilde: "", widehat: "", overline: "", underline: "", "{": "\u0001", "}": "\u0002", "%": "%",
  };
  const SUPER = {"2": "²", "3": "³", "*": "*", "-1": "⁻¹", T: "ᵀ", "\\top": "ᵀ", "\\ast": "*", "\\star": "*"};
  const texToPlain = (tex) => {
    let s = tex.trim().replace(/^\\\(|\\\)$|^\\\[|\\\]$|^\$\$?|\$\$?$/g, "");
    s = s.replace(/\\begin\{[^}]*\}|\\end\{[^}]*\}|&|\\\\/g, " ");
    // \frac{a}{b} -> (a)/(b) for one level of braces
    s = s.replace(/\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, "($1)/($2)");
    s = s.replace(/\^\{([^{}]*)\}|\^(\\?[A-Za-z0-9*]|-1)/g, (m, a, b) => {
      const e = (a !== undefined ? a : b).trim();
      return SUPER[e] !== undefined ? SUPER[e] : "^" + e;
    });
    s = s.replace(/\\([A-Za-z]+|[,;!{}%])/g, (m, name) => (SYMBOLS[name] !== undefined ? SYMBOLS[name] : name));
    s = s.replace(/[{}]/g, "").replace(/\(([^()\s]{1,3})\)\/\(([^()\s]{1,3})\)/g, "$1/$2");
    return s.replace(/\u0001/g, "{").replace(/\u0002/g, "}").replace(/\s+/g, " ").trim();
  };

  const plainHtmlToText = (htmlString, anchor) => {
    const doc = new DOMParser().parseFromString(htmlString, "text/html");
    // code cells' source and code blocks are left out of the snippet: it shows the prose around the word
    for (const q of [".headerlink", "script", "style", ".cell_input", "div.highlight", "pre"])
      doc.querySelectorAll(q).forEach((el) => el.remove());
    doc.querySelectorAll(".math, span.math, div.math").forEach((el) => {
      el.textContent = " " + texToPlain(el.textContent) + " ";
    });
    const main = (anchor && doc.querySelector(`[role="main"] ${anchor}`)) || doc.querySelector('[role="main"]');
    return main ? main.textContent.replace(/\s+/g, " ") : "";
  };

  const install = () => {
    if (typeof Search === "undefined" || Search.__fedbookFold) return;
    Search.__fedbookFold = true;
    const setIndex = Search.setIndex;
    Search.setIndex = (index) => setIndex(foldIndex(index));
    if (Search._index) foldIndex(Search._index);  // the index arrived before this script
    Search.htmlToText = plainHtmlToText;
    if (typeof Scorer !== "undefined") Scorer.score = score;
  };
  window.fedbookTexToPlain = texToPlain;  // for the browser test
  install();  // searchtools.js loaded first
  document.addEventListener("DOMContentLoaded", install);  // or later in the page
})();
