/* Accent-insensitive search: "Renyi" finds "Rényi".  Sphinx's index keeps each stemmed word with its
   accents; when the index is set, every accented term is also filed under its folded spelling (NFD,
   combining marks removed), so that a query typed without accents finds it. */
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
  const foldIndex = (index) => {
    if (index && !index.__fedbookFolded) {
      merge(index.terms);
      merge(index.titleterms);
      index.__fedbookFolded = true;
    }
    return index;
  };
  const install = () => {
    if (typeof Search === "undefined" || Search.__fedbookFold) return;
    Search.__fedbookFold = true;
    const setIndex = Search.setIndex;
    Search.setIndex = (index) => setIndex(foldIndex(index));
    if (Search._index) foldIndex(Search._index);  // the index arrived before this script
  };
  install();  // searchtools.js loaded first
  document.addEventListener("DOMContentLoaded", install);  // or later in the page
})();
