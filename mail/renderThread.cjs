// A render thread of mail/renderPool.ts: the renderer, loaded as this process can (core/requireSource.cjs).
module.exports = require('../core/requireSource.cjs')(__dirname, 'render').renderJobs;
