export const greet = (n: string) => `hi ${n}`;
