/**
 * Every filter the product shows as an example: the Live filter's placeholder and the suggestions offered under it.
 * One list, so one test (tests/lib/filter/examples.test.ts) parses each of them, with the examples of the filter
 * language's page (docs/site/filters.md): an example a person copies must be accepted.
 */

/** The Live filter's placeholder (after "Filter, e.g."). */
export const placeholderExample = 'response.status >= 500 || request.url contains "/api/"';

/** The suggestions always offered under the filter input, most useful first. */
export const suggestedFilters = [
  'request.method == "POST"',
  "response.status >= 500",
  "response.status >= 400",
  'request.url contains "/api/"',
  "duration > 1000ms",
  'request.url startsWith "/"',
  'request.method == "GET"',
  "response.status == 404",
  'tls == "not decrypted"',
  // HTTP only (database calls left out), and the database calls that failed.
  'db.system == ""',
  'db.error != ""',
  'response.unanswered != ""',
] as const;

export const filterExamples: readonly string[] = [placeholderExample, ...suggestedFilters];
