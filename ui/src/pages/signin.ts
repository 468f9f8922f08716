// The sign-in page: an admin or read key, exchanged for a session cookie.

import * as api from "../api";
import { errorBox } from "../common";
import { h, notice, replace } from "../dom";

export function signInPage(root: HTMLElement, onDone: () => void): void {
  const input = h("input", { type: "password", id: "token", name: "token", autocomplete: "off",
    placeholder: "rt_…", "aria-label": "API key", required: true });
  const msg = h("div", { class: "signin-msg" });
  const form = h("form", { class: "signin" },
    h("h1", null, "Sign in to RootTrace"),
    h("p", null, "Paste an admin or read key. The first start of the server printed the admin key (or it is ROOTTRACE_BOOTSTRAP_TOKEN; `make demo` prints it). A read key sees everything and changes nothing."),
    h("label", { for: "token" }, "Key"), input,
    h("button", { type: "submit" }, "Sign in"), msg);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    replace(msg);
    try {
      await api.signIn(input.value.trim());
      onDone();
    } catch (err) {
      if (err instanceof api.ApiError && err.status === 401) replace(msg, notice("error", "Unknown key", "That key is unknown or revoked. Check it, or make one with `roottrace key create --scope read`."));
      else if (err instanceof api.ApiError && err.status === 403) replace(msg, notice("error", "Not a UI key", "Ingest keys upload profiles; sign in with an admin or read key."));
      else replace(msg, errorBox(err));
    }
  });
  replace(root, form);
  input.focus();
}
