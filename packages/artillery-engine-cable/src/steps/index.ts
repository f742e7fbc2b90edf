import { CableError } from "../errors.js";
import type { StepFn } from "../vu.js";
import { compileListen, compilePerform, compileReceive, compileSubscribe, compileUnsubscribe } from "./channel.js";
import type { Compiler } from "./compiler.js";
import { compileConnect, compileDisconnect } from "./connection.js";
import { compilePublish, compileTrigger } from "./pusher.js";
import { compileBroadcast, compileJoin, compileLeave, compileWhisper } from "./anycable.js";
import { compileReconnect } from "./reconnect.js";
import { compileFunction, compileLog, compileLoop, compileThink } from "./flow.js";

/** Compiles one validated step (schema.ts has checked its shape before any load started). */
export function compileStep(compiler: Compiler, step: Record<string, any>): StepFn {
  if (step.probability === undefined) return compileBare(compiler, step);
  const run = compileBare(compiler, step);
  return (context, callback) => (compiler.helpers.isProbableEnough(step) ? run(context, callback) : callback(null, context));
}

function compileBare(compiler: Compiler, step: Record<string, any>): StepFn {
  if ("connect" in step) return compileConnect(compiler, step.connect);
  if ("subscribe" in step) return compileSubscribe(compiler, step.subscribe);
  if ("perform" in step) return compilePerform(compiler, step.perform);
  if ("trigger" in step) return compileTrigger(compiler, step.trigger);
  if ("publish" in step) return compiler.settings.protocol === "pusher" ? compilePublish(compiler, step.publish) : compileBroadcast(compiler, step.publish);
  if ("whisper" in step) return compileWhisper(compiler, step.whisper);
  if ("join" in step) return compileJoin(compiler, step.join);
  if ("leave" in step) return compileLeave(compiler, step.leave);
  if ("reconnect" in step) return compileReconnect(compiler, step.reconnect);
  if ("receive" in step) return compileReceive(compiler, step.receive);
  if ("listen" in step) return compileListen(compiler, step.listen);
  if ("unsubscribe" in step) return compileUnsubscribe(compiler, step.unsubscribe);
  if ("disconnect" in step) return compileDisconnect();
  if ("think" in step) return compileThink(compiler, step);
  if ("loop" in step) return compileLoop(compiler, step);
  if ("function" in step) return compileFunction(compiler, step.function);
  if ("log" in step) return compileLog(compiler, step.log);
  throw new CableError("invalid_scenario", `unknown step ${Object.keys(step).join(", ")}`);
}
