// A JavaScript assertion as promptfoo calls it: (output, context) => boolean | number | result.
module.exports.mentionsPolicy = (output, context) => {
  const days = output.match(/(\d+) days/);
  if (!days) {
    return { pass: false, score: 0, reason: 'No refund window in the reply' };
  }
  const window = Number(days[1]);
  return {
    pass: window === 30,
    score: window === 30 ? 1 : 0.5,
    reason: `The reply gives a ${window}-day window to "${context.vars.message}"`,
  };
};
