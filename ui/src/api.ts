// The API client: same-origin fetches carrying the session cookie, and the session's CSRF
// token on every request that changes something (POST, PUT, DELETE).

export class ApiError extends Error {
  constructor(public status: number, public code: string, message: string) {
    super(message);
  }
}

/** The server could not be reached at all (no HTTP answer). */
export class Unreachable extends Error {}

export interface Session {
  scope: "admin" | "read";
  csrf_token: string;
  expires_at: string;
}

let session: Session | null = null;

export function currentSession(): Session | null {
  return session;
}

export function canChange(): boolean {
  return session?.scope === "admin";
}

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && session) headers["X-CSRF-Token"] = session.csrf_token;
  let r: Response;
  try {
    r = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
      cache: "no-store",
    });
  } catch (e) {
    throw new Unreachable(String(e));
  }
  const text = await r.text();
  let data: unknown = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    if (!r.ok) throw new ApiError(r.status, "error", text.slice(0, 300) || r.statusText);
  }
  if (!r.ok) {
    const e = (data ?? {}) as { error?: string; message?: string };
    throw new ApiError(r.status, e.error ?? "error", e.message ?? r.statusText);
  }
  return data as T;
}

export function get<T>(path: string, params?: Record<string, string | number | undefined>): Promise<T> {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params ?? {})) if (v !== undefined && v !== "") q.set(k, String(v));
  const s = q.toString();
  return call<T>("GET", s ? `${path}?${s}` : path);
}

export const put = <T>(path: string, body: unknown) => call<T>("PUT", path, body);
export const post = <T>(path: string, body: unknown) => call<T>("POST", path, body);

export async function signIn(token: string): Promise<Session> {
  session = await call<Session>("POST", "/api/v1/session", { token });
  return session;
}

/** The session of the cookie, if any (after a reload); null when signed out. */
export async function resume(): Promise<Session | null> {
  try {
    session = await call<Session>("GET", "/api/v1/session");
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) session = null;
    else throw e;
  }
  return session;
}

/** Forgets the session locally (the server already ended it: a 401). */
export function forget(): void {
  session = null;
}

export async function signOut(): Promise<void> {
  try {
    await call("DELETE", "/api/v1/session");
  } finally {
    session = null;
  }
}

// ---- answer shapes (docs/openapi.yaml) ----

export type PType = "cpu" | "wall";

export interface Instance {
  instance: string; runtime: string | null; sdk_version: string | null; version: string | null;
  status: string | null; last_seen: string; stale: boolean;
  /** Another agent's instance (DESIGN §12): its name, and what RootTrace cannot do. */
  agent?: string | null; note?: string | null;
}
/** Who sampled an answer's profiles (DESIGN §12). */
export interface Producer { agent: string; method: string; note: string; declared_type: PType | null; profiles: number }
export interface Service {
  name: string; profiling_enabled: boolean; types: PType[]; last_upload: string | null;
  instances: Instance[];
}
export interface FlameGraph {
  truncated: boolean;
  names: string[];
  nodes: { parent: number[]; depth: number[]; name: number[]; total_ns: number[]; self_ns: number[]; samples: (number | null)[] };
}
export interface DiffFlameGraph {
  truncated: boolean;
  names: string[];
  nodes: { parent: number[]; depth: number[]; name: number[]; base_ns: number[]; cur_ns: number[];
    base_share: number[]; cur_share: number[]; delta_pp: number[] };
}
export interface CapacityInstance {
  instance: string; cpu_s: number; sampled_cpu_s: number; unattributed_cpu_s: number; os_cpu_s: number | null; cpu_factor: number | null;
  profiled_s: number; alive_s: number; vcpu_hours_per_month: number | null;
}
/** cpu_s is what capacity used: the OS figure where the sampler ticks on wall time (DESIGN §7). */
export interface CapacityInputs {
  cpu_s: number; sampled_cpu_s: number; unattributed_cpu_s: number; os_cpu_s: number | null; cpu_factor: number | null;
  cpu_basis: "os" | "samples" | "mixed"; profiles_scaled: number; profiles_unchecked: number; cpu_note: string | null;
  window_s: number; profiled_s: number; alive_s: number; coverage: number | null;
  instances_alive: number; instances_profiled: number; instances_unprofiled: number;
  hours_per_month: number; note?: string; unprofiled_note?: string | null;
  instances: CapacityInstance[]; instances_truncated: boolean;
}
export interface Quality { profiles: number; coverage: number | null; has_data: boolean; instances_alive: number; instances_profiled: number; instances_unprofiled: number; truncated_stacks: number }
export interface CpuAgreement {
  sampled_cpu_s: number; os_cpu_s: number; os_thread_cpu_s: number | null; ratio: number | null; warning: string | null;
  scope: string; capacity_uses: "os" | "sampled" | "mixed"; profiles: number;
}
export interface ProfileAnswer {
  cpu_agreement?: CpuAgreement | null;
  service: string; type: PType; type_note: string; producers?: Producer[]; from: string; to: string; profiles: number;
  samples: number | null; value_ns: number;
  functions: { name: string; self_ns: number; total_ns: number; self_share: number; total_share: number; vcpu_hours_per_month: number | null }[];
  flamegraph: FlameGraph;
  capacity: { vcpu_hours_per_month: number; inputs: CapacityInputs } | null;
  capacity_unavailable: string | null;
  quality: Quality & { warnings: string[] };
}
export interface DiffFunction {
  name: string; base_share: number; cur_share: number; delta_pp: number; base_total_share: number;
  cur_total_share: number; base_samples: number | null; cur_samples: number | null;
  significant: boolean | null; new: boolean; vcpu_hours_per_month: { base: number | null; cur: number | null } | null;
}
export interface DiffWindow { from: string; to: string; profiles: number; samples: number | null; value_ns: number }
/** GET /api/v1/timeline: each bucket is what GET /api/v1/profile says of its window. */
export interface TimelineAnswer { service: string; type: PType; from: string; to: string; buckets: DiffWindow[] }
export interface DiffAnswer {
  service: string; type: PType; type_note: string; producers?: Producer[]; issue: Issue | null; window_s: number;
  baseline: DiffWindow; current: DiffWindow; functions: DiffFunction[]; truncated?: boolean;
  deploys: { version: string; at: string; source: "declared" | "observed" }[];
  flamegraph: DiffFlameGraph;
  capacity: { vcpu_hours_per_month: { base: number | null; cur: number | null }; inputs: { base: CapacityInputs; cur: CapacityInputs } } | null;
  capacity_unavailable: string | null;
  significance_unavailable?: string | null;
  quality: { baseline: Quality; current: Quality; warnings: string[] };
  cpu_agreement?: { baseline: CpuAgreement | null; current: CpuAgreement | null } | null;
}
/** The alert that opened an issue (DESIGN §13). */
export interface IssueAlert {
  fingerprint: string; starts_at: string; lead_s: number; lead_source: "annotation" | "server" | "none";
  labels: Record<string, string>; generator_url: string | null; status: "firing" | "resolved";
  last_notified_at: string | null; notifications: number;
}
export interface Issue {
  id: string; service: string; title: string; started_at: string; created_at: string;
  ended_at?: string | null; state?: "open" | "ended"; source?: "api" | "alertmanager" | "grafana"; alert?: IssueAlert | null;
}
export interface Deploy { version: string; at: string; source: "declared" | "observed" }
