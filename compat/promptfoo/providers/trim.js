// An output transform module: the answer's first sentence, without its full stop.
module.exports = (output, context) => output.split('.')[0] + ` [${context.vars.country}]`;
