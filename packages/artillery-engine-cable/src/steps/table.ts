import { join, leave, whisper } from "./anycable.js";
import { listen, perform, receive, subscribe, unsubscribe } from "./channel.js";
import { connect, disconnect } from "./connection.js";
import { fn, log, loop, think } from "./flow.js";
import { publish, trigger } from "./pusher.js";
import { reconnect } from "./reconnect.js";
import { del, get, patch, post, put } from "./request.js";

/** Every step the engine knows, by its key in a flow: the one place a new step is added. */
export const STEPS = {
  connect,
  subscribe,
  perform,
  receive,
  trigger,
  publish,
  whisper,
  join,
  leave,
  reconnect,
  listen,
  unsubscribe,
  disconnect,
  get,
  post,
  put,
  patch,
  delete: del,
  think,
  function: fn,
  log,
  loop,
};

export type StepName = keyof typeof STEPS;

export const isStepName = (key: string): key is StepName => Object.prototype.hasOwnProperty.call(STEPS, key);
