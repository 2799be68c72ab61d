/**
 * A module's options completed by its `DEFAULTS`: each key of `defaults` takes the option's value,
 * or the default where the option is missing (undefined or null, as `??` reads it). Options that
 * `defaults` does not name are left out: the caller copies those it needs. Name `T` where the
 * defaults are narrower than the options (a frozen object's literal types).
 */
export function withDefaults<T extends object>(defaults: Readonly<T>, options: { readonly [K in keyof T]?: T[K] | null }): T {
  const out = { ...defaults } as T;
  for (const key of Object.keys(defaults) as Array<keyof T>) out[key] = options[key] ?? defaults[key];
  return out;
}
