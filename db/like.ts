/**
 * User text as a literal in a LIKE pattern: its `%`, `_` and `\` stand for themselves (LIKE's escape character is `\`
 * unless a statement names another). Wrap the result in `%` as the match needs: `%${likeLiteral(s)}%` holds s.
 */
export const likeLiteral = (s: string): string => s.replace(/[\\%_]/g, (c) => `\\${c}`);
