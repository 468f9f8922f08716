// Pricing: the CPU-bound part of a checkout. In release 2.0 applyDiscount does three times
// the work (the regression `make demo` finds).
'use strict';

const WORK = process.env.DEMO_VERSION === '2.0' ? 3 : 1;

function applyDiscount(cart) {
  let h = 0;
  for (let r = 0; r < WORK; r++) {
    for (let i = 0; i < 60000; i++) h = (h * 31 + cart.items[i % cart.items.length]) | 0;
  }
  return h;
}

function tax(cart) {
  let t = 0;
  for (let i = 0; i < 30000; i++) t = (t + cart.items[i % cart.items.length] * 7) | 0;
  return t;
}

module.exports = { applyDiscount, tax };
