// The receiver is production code now (the sink of `qwn demo`); tests keep importing it here.
export * from '../../src/demo/webhook-receiver.js';
