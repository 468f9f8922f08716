// Rendering the checkout page: string building, the other CPU cost of a request.
'use strict';

function renderReceipt(cart, total) {
  const rows = [];
  for (let i = 0; i < 400; i++) rows.push(`<tr><td>${cart.items[i % cart.items.length]}</td></tr>`);
  return `<table>${rows.join('')}</table><p>${total}</p>`;
}

module.exports = { renderReceipt };
