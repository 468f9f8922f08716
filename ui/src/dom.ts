// DOM helpers. Every string from the server (function, service, instance names) goes into
// the page as a text node or a property, never as HTML: there is no innerHTML in this UI.

type Attrs = Record<string, string | number | boolean | undefined | ((e: Event) => void)>;
export type Child = Node | string | number | null | undefined | false;

/** Creates an element; attributes named on* are listeners, the rest are set as attributes
 * (strings only, never parsed as HTML); children are nodes or text. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs | null = null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === false) continue;
      if (typeof v === "function") el.addEventListener(k.slice(2), v as EventListener);
      else if (k === "value") (el as HTMLInputElement).value = String(v);
      else el.setAttribute(k, v === true ? "" : String(v));
    }
  }
  append(el, ...children);
  return el;
}

export function append(el: Node, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
}

/** Replaces el's children. */
export function replace(el: Node, ...children: Child[]): void {
  while (el.firstChild) el.removeChild(el.firstChild);
  append(el, ...children);
}

/** A labelled message box: kind is "info", "warn" or "error". */
export function notice(kind: "info" | "warn" | "error", title: string, ...body: Child[]): HTMLElement {
  return h("div", { class: `notice ${kind}`, role: kind === "error" ? "alert" : "status" },
    h("strong", null, title), ...body.map((b) => (typeof b === "string" ? h("p", null, b) : b)));
}
