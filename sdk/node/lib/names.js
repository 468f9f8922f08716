'use strict';
// Service and instance names as the server accepts them: 1-200 bytes of valid UTF-8, no
// control characters, no '/'. The server answers 400 to anything else, so a name it would
// refuse is refused here instead of leaving the instance `waiting` forever.

// The server's limit on service and instance names, in UTF-8 bytes.
const NAME_MAX_BYTES = 200;

// A UTF-16 surrogate without its other half: not encodable as UTF-8.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
// Control characters as the server counts them: C0 (tab included) and DEL. (C1,
// U+0080-U+009F, is accepted by the server, so it is here.)
const CONTROL = /[\u0000-\u001f\u007f]/;

/** null when the server accepts `name`, else why not (printable ASCII, for a status). */
function nameProblem(name) {
  if (typeof name !== 'string') return 'not a string';
  if (name === '') return 'empty';
  if (LONE_SURROGATE.test(name)) return 'not valid UTF-8: lone surrogate';
  const n = Buffer.byteLength(name, 'utf8');
  if (n > NAME_MAX_BYTES) return `${n} bytes, at most ${NAME_MAX_BYTES}`;
  if (name.includes('/')) return "contains '/'";
  const c = CONTROL.exec(name);
  if (c) return `control character U+${c[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
  return null;
}

/**
 * `s` made acceptable inside a name (for the generated instance id): control characters,
 * lone surrogates and '/' become '-', cut to at most maxBytes of UTF-8 on a character
 * boundary.
 */
function safeNamePart(s, maxBytes) {
  let out = '';
  let bytes = 0;
  for (const ch of String(s)) {
    const c = ch === '/' || CONTROL.test(ch) || LONE_SURROGATE.test(ch) ? '-' : ch;
    const b = Buffer.byteLength(c, 'utf8');
    if (bytes + b > maxBytes) break;
    out += c;
    bytes += b;
  }
  return out;
}

module.exports = { nameProblem, safeNamePart, NAME_MAX_BYTES };
