// promptfoo's `file://provider.js` convention: a class with callApi.
const capitals = require('./capitals.json');

class Capitals {
  constructor(options) {
    this.style = (options.config && options.config.style) || 'plain';
  }
  id() {
    return 'capitals-js';
  }
  async callApi(prompt, context) {
    const country = Object.keys(capitals).find((c) => prompt.toLowerCase().includes(c.toLowerCase()));
    const text = country ? `${capitals[country]} is the capital of ${country}.` : 'No idea.';
    return { output: this.style === 'loud' ? text.toUpperCase() : text };
  }
}
module.exports = Capitals;
